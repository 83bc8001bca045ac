#include "real/trace_exchange.h"
