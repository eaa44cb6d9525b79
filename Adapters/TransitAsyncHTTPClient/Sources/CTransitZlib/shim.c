// The header is the whole module; a C target needs one source file.
#include "CTransitZlib.h"
