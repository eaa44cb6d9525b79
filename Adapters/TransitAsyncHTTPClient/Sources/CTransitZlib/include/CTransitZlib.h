#ifndef C_TRANSIT_ZLIB_H
#define C_TRANSIT_ZLIB_H

#include <zlib.h>

/// `inflateInit2`, a macro in zlib.h, as a function Swift can call.
static inline int CTransitZlib_inflateInit2(z_streamp stream, int windowBits) {
    return inflateInit2(stream, windowBits);
}

/// `deflateInit2`, a macro in zlib.h, as a function Swift can call (tests make fixtures with it).
static inline int CTransitZlib_deflateInit2(z_streamp stream, int level, int windowBits) {
    return deflateInit2(stream, level, Z_DEFLATED, windowBits, 8, Z_DEFAULT_STRATEGY);
}

#endif
