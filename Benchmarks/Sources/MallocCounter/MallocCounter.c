// A malloc counter: on glibc, the executable defines the allocator entry points, which the
// dynamic linker then resolves for every library in the process (the Swift runtime included), and
// forwards them to glibc's own implementations (__libc_malloc and friends). Counting is off unless
// started, and costs one relaxed load per allocation when off.
#include "MallocCounter.h"

#if defined(__linux__) && defined(__GLIBC__)
#include <stdatomic.h>
#include <stddef.h>
#include <errno.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void __libc_free(void *pointer);

static atomic_int counting = 0;
static atomic_uint_fast64_t allocations = 0;
static atomic_uint_fast64_t bytes = 0;

static inline void count(size_t size) {
    if (atomic_load_explicit(&counting, memory_order_relaxed)) {
        atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&bytes, size, memory_order_relaxed);
    }
}

void *malloc(size_t size) {
    count(size);
    return __libc_malloc(size);
}

void *calloc(size_t count_, size_t size) {
    count(count_ * size);
    return __libc_calloc(count_, size);
}

void *realloc(void *pointer, size_t size) {
    count(size);
    return __libc_realloc(pointer, size);
}

void *memalign(size_t alignment, size_t size) {
    count(size);
    return __libc_memalign(alignment, size);
}

void *aligned_alloc(size_t alignment, size_t size) {
    count(size);
    return __libc_memalign(alignment, size);
}

int posix_memalign(void **result, size_t alignment, size_t size) {
    count(size);
    void *pointer = __libc_memalign(alignment, size);
    if (pointer == NULL) return ENOMEM;
    *result = pointer;
    return 0;
}

void free(void *pointer) {
    __libc_free(pointer);
}

void malloc_counter_start(void) {
    atomic_store(&allocations, 0);
    atomic_store(&bytes, 0);
    atomic_store(&counting, 1);
}

void malloc_counter_stop(void) {
    atomic_store(&counting, 0);
}

uint64_t malloc_counter_allocations(void) { return atomic_load(&allocations); }
uint64_t malloc_counter_bytes(void) { return atomic_load(&bytes); }
int malloc_counter_available(void) { return 1; }

#else

void malloc_counter_start(void) {}
void malloc_counter_stop(void) {}
uint64_t malloc_counter_allocations(void) { return 0; }
uint64_t malloc_counter_bytes(void) { return 0; }
int malloc_counter_available(void) { return 0; }

#endif
