#ifndef SOAK_MALLOC_H
#define SOAK_MALLOC_H
#include <stddef.h>

/// Bytes in allocated chunks of every arena plus mmapped chunks (glibc's mallinfo2); -1 elsewhere.
long long soak_heap_in_use(void);

/// Bytes the allocator holds from the system (arenas and mmapped chunks); -1 elsewhere.
long long soak_heap_held(void);

/// glibc's malloc_trim(0): free memory at the top and inside arenas given back to the system.
void soak_heap_trim(void);

#endif
