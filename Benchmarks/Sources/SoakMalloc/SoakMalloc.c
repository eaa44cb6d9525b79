#include "SoakMalloc.h"
#if defined(__linux__)
#include <malloc.h>
#endif
#if defined(__GLIBC__)

long long soak_heap_in_use(void) {
    struct mallinfo2 info = mallinfo2();
    return (long long)(info.uordblks + info.hblkhd);
}

long long soak_heap_held(void) {
    struct mallinfo2 info = mallinfo2();
    return (long long)(info.arena + info.hblkhd);
}

void soak_heap_trim(void) { malloc_trim(0); }
#else
long long soak_heap_in_use(void) { return -1; }
long long soak_heap_held(void) { return -1; }
void soak_heap_trim(void) {}
#endif
