/* A count of every heap allocation of the process, for a C program that checks (or measures)
 * that libmilsvm_c's scoring calls allocate nothing: include it in one translation unit that is
 * linked into the program, then read allocations() before and after the calls. glibc only (it
 * forwards to glibc's __libc_* entry points). */
#ifndef MILSVM_COUNT_ALLOCS_H
#define MILSVM_COUNT_ALLOCS_H

#include <stddef.h>

/* Every heap allocation of the process (this program and libmilsvm_c alike) goes through these
 * definitions, which count it and forward it to glibc. */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);
static size_t n_allocs;
static void counted(void) { __atomic_fetch_add(&n_allocs, 1, __ATOMIC_RELAXED); }
void *malloc(size_t n) { counted(); return __libc_malloc(n); }
void *calloc(size_t n, size_t m) { counted(); return __libc_calloc(n, m); }
void *realloc(void *p, size_t n) { counted(); return __libc_realloc(p, n); }
void *memalign(size_t a, size_t n) { counted(); return __libc_memalign(a, n); }
void *aligned_alloc(size_t a, size_t n) { counted(); return __libc_memalign(a, n); }
int posix_memalign(void **p, size_t a, size_t n) {
    counted();
    *p = __libc_memalign(a, n);
    return *p ? 0 : 12; /* ENOMEM */
}
void free(void *p) { __libc_free(p); }
static inline size_t allocations(void) { return __atomic_load_n(&n_allocs, __ATOMIC_RELAXED); }

#endif
