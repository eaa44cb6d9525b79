#ifndef MALLOC_COUNTER_H
#define MALLOC_COUNTER_H

#include <stdint.h>

/// Starts counting allocations (calls to malloc, calloc, realloc, posix_memalign, aligned_alloc,
/// memalign) made by any thread, from zero.
void malloc_counter_start(void);
/// Stops counting.
void malloc_counter_stop(void);
/// Allocations counted since the last start.
uint64_t malloc_counter_allocations(void);
/// Bytes asked for by the counted allocations.
uint64_t malloc_counter_bytes(void);
/// 1 if the counter replaced the allocator (Linux, glibc), 0 if it cannot count here.
int malloc_counter_available(void);

#endif
