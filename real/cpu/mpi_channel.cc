#include "real/cpu/cpu_backend.h"
