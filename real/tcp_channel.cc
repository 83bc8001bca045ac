#include "real/channel.h"
