/*
 * Latency of the C library (libmilsvm_c): nanoseconds per call of milsvm_score_bag_f64 on one
 * bag, with a warm thread, timed by clock_gettime(CLOCK_MONOTONIC); and the heap allocations per
 * call, counted by interposing malloc and its relatives (tests/c/count_allocs.h, shared with the
 * C library's allocation test). Driven by benches/serving.py c.
 *
 *   c_latency MODEL BAG_F64 N_FEATURES CALLS REPEATS
 *
 * prints one line: "ns_per_bag MEDIAN min MIN allocs_per_call A calls N"
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "count_allocs.h" /* tests/c/: every heap allocation of the process, counted */
#include "milsvm.h"

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: c_latency MODEL BAG_F64 N_FEATURES CALLS REPEATS\n");
        return 1;
    }
    MilsvmModel *model = NULL;
    if (milsvm_model_load(argv[1], &model) != MILSVM_OK) {
        fprintf(stderr, "%s\n", milsvm_last_error());
        return 2;
    }
    FILE *f = fopen(argv[2], "rb");
    if (!f) return 3;
    fseek(f, 0, SEEK_END);
    size_t bytes = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    double *x = malloc(bytes);
    if (fread(x, 1, bytes, f) != bytes) return 3;
    fclose(f);
    size_t d = (size_t)strtoull(argv[3], NULL, 10), n = bytes / sizeof(double) / d;
    long calls = atol(argv[4]), repeats = atol(argv[5]);
    double *scores = malloc(milsvm_model_n_outputs(model) * sizeof(double)), sink = 0.0;
    double *ns = malloc((size_t)repeats * sizeof(double));
    for (long i = 0; i < calls; i++) milsvm_score_bag_f64(model, x, n, d, scores); /* warm-up */
    size_t start = allocations();
    for (long r = 0; r < repeats; r++) {
        double t0 = now_ns();
        for (long i = 0; i < calls; i++) {
            if (milsvm_score_bag_f64(model, x, n, d, scores) != MILSVM_OK) return 4;
            sink += scores[0];
        }
        ns[r] = (now_ns() - t0) / (double)calls;
    }
    size_t allocs = allocations() - start;
    qsort(ns, (size_t)repeats, sizeof(double), by_value);
    printf("ns_per_bag %.1f min %.1f allocs_per_call %g calls %ld sink %g\n", ns[repeats / 2], ns[0],
           (double)allocs / (double)(calls * repeats), calls * repeats, sink);
    free(ns), free(scores), free(x);
    milsvm_model_free(model);
    return 0;
}
