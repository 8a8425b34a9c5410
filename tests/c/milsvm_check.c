/*
 * The C side of tests/test_capi.py: scores bags with libmilsvm_c and writes the raw doubles for
 * Python to compare bit for bit; scores them from 8 threads at once; and reports the code and
 * message of every bad input.
 *
 *   milsvm_check score   MODEL X_F64 X_F32 BAG_PTR N_FEATURES OUT
 *       writes OUT.scores64, OUT.scores32 (n_bags x n_outputs), OUT.inst64, OUT.inst32
 *       (n_instances x n_outputs; absent for a model without instance scores), OUT.proba64,
 *       OUT.proba32 (n_bags x n_classes; absent for a model without probabilities)
 *   milsvm_check threads MODEL X_F64 BAG_PTR N_FEATURES ROUNDS
 *       8 threads score every bag ROUNDS times each; exit 0 if every score equals the first
 *       thread-free pass bit for bit
 *   milsvm_check errors  MODEL_WITHOUT_PROBA MODEL_STK
 *       one line per bad call: "name<TAB>code<TAB>message"
 *   milsvm_check load    PATH...
 *       one line per file: "path<TAB>code<TAB>message"
 *   milsvm_check allocs  MODEL X_F64 X_F32 BAG_PTR N_FEATURES ROUNDS
 *       (built with -DMILSVM_COUNT_ALLOCS) every scoring function on every bag once to warm up,
 *       then ROUNDS times more: prints "calls N allocations M" of the timed rounds, and the
 *       allocations of loading the model (which must be counted, > 0)
 *
 * Inputs are raw little-endian files: X_F64 doubles and X_F32 floats (every instance, stacked,
 * row-major), BAG_PTR uint64 offsets (n_bags + 1).
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "milsvm.h"

#ifdef MILSVM_COUNT_ALLOCS
#include "count_allocs.h"
#endif

static void *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *buf = malloc(n > 0 ? (size_t)n : 1);
    if (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        perror(path);
        exit(2);
    }
    fclose(f);
    *size = (size_t)n;
    return buf;
}

static void write_file(const char *prefix, const char *suffix, const double *v, size_t n) {
    char path[4096];
    snprintf(path, sizeof path, "%s.%s", prefix, suffix);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(v, sizeof(double), n, f) != n) {
        perror(path);
        exit(2);
    }
    fclose(f);
}

static MilsvmModel *load_or_die(const char *path) {
    MilsvmModel *model = NULL;
    int rc = milsvm_model_load(path, &model);
    if (rc != MILSVM_OK) {
        fprintf(stderr, "load %s: code %d: %s\n", path, rc, milsvm_last_error());
        exit(3);
    }
    return model;
}

static void check(int rc, const char *what, size_t bag) {
    if (rc != MILSVM_OK) {
        fprintf(stderr, "%s of bag %zu: code %d: %s\n", what, bag, rc, milsvm_last_error());
        exit(4);
    }
}

static int score(int argc, char **argv) {
    if (argc != 8) return 1;
    MilsvmModel *model = load_or_die(argv[2]);
    size_t s64, s32, sptr;
    double *x64 = read_file(argv[3], &s64);
    float *x32 = read_file(argv[4], &s32);
    uint64_t *ptr = read_file(argv[5], &sptr);
    size_t d = (size_t)strtoull(argv[6], NULL, 10);
    const char *out = argv[7];
    size_t n_bags = sptr / sizeof(uint64_t) - 1, n = ptr[n_bags];
    size_t n_out = milsvm_model_n_outputs(model), n_cls = milsvm_model_n_classes(model);
    if (d != milsvm_model_n_features(model) || s64 != n * d * sizeof(double) || s32 != n * d * sizeof(float)) {
        fprintf(stderr, "inputs do not fit the model\n");
        return 5;
    }
    double *bag64 = malloc(n_bags * n_out * sizeof(double));
    double *bag32 = malloc(n_bags * n_out * sizeof(double));
    double *inst64 = malloc(n * n_out * sizeof(double));
    double *inst32 = malloc(n * n_out * sizeof(double));
    double *p64 = malloc(n_bags * n_cls * sizeof(double));
    double *p32 = malloc(n_bags * n_cls * sizeof(double));
    int has_inst = 1, has_proba = milsvm_model_has_probabilities(model);
    for (size_t i = 0; i < n_bags; i++) {
        size_t lo = ptr[i], m = ptr[i + 1] - ptr[i];
        check(milsvm_score_bag_f64(model, x64 + lo * d, m, d, bag64 + i * n_out), "score_bag_f64", i);
        check(milsvm_score_bag_f32(model, x32 + lo * d, m, d, bag32 + i * n_out), "score_bag_f32", i);
        int rc = milsvm_instance_scores_f64(model, x64 + lo * d, m, d, inst64 + lo * n_out);
        if (rc == MILSVM_ERR_NO_INSTANCE_SCORES) {
            has_inst = 0;
        } else {
            check(rc, "instance_scores_f64", i);
            check(milsvm_instance_scores_f32(model, x32 + lo * d, m, d, inst32 + lo * n_out),
                  "instance_scores_f32", i);
        }
        if (has_proba) {
            check(milsvm_predict_proba_bag_f64(model, x64 + lo * d, m, d, p64 + i * n_cls), "proba_f64", i);
            check(milsvm_predict_proba_bag_f32(model, x32 + lo * d, m, d, p32 + i * n_cls), "proba_f32", i);
        }
    }
    write_file(out, "scores64", bag64, n_bags * n_out);
    write_file(out, "scores32", bag32, n_bags * n_out);
    if (has_inst) {
        write_file(out, "inst64", inst64, n * n_out);
        write_file(out, "inst32", inst32, n * n_out);
    }
    if (has_proba) {
        write_file(out, "proba64", p64, n_bags * n_cls);
        write_file(out, "proba32", p32, n_bags * n_cls);
    }
    free(bag64), free(bag32), free(inst64), free(inst32), free(p64), free(p32);
    free(x64), free(x32), free(ptr);
    milsvm_model_free(model);
    return 0;
}

struct job {
    const MilsvmModel *model;
    const double *x;
    const uint64_t *ptr;
    size_t n_bags, d, n_out, rounds;
    const double *want;
    size_t mismatches, failures;
};

static void *worker(void *arg) {
    struct job *job = arg;
    double *got = malloc(job->n_out * sizeof(double));
    for (size_t r = 0; r < job->rounds; r++) {
        for (size_t i = 0; i < job->n_bags; i++) {
            size_t lo = job->ptr[i], m = job->ptr[i + 1] - lo;
            if (milsvm_score_bag_f64(job->model, job->x + lo * job->d, m, job->d, got) != MILSVM_OK) {
                job->failures++;
                continue;
            }
            if (memcmp(got, job->want + i * job->n_out, job->n_out * sizeof(double)) != 0) job->mismatches++;
        }
    }
    free(got);
    return NULL;
}

static int threads(int argc, char **argv) {
    if (argc != 7) return 1;
    MilsvmModel *model = load_or_die(argv[2]);
    size_t s64, sptr;
    double *x = read_file(argv[3], &s64);
    uint64_t *ptr = read_file(argv[4], &sptr);
    size_t d = (size_t)strtoull(argv[5], NULL, 10), rounds = (size_t)strtoull(argv[6], NULL, 10);
    size_t n_bags = sptr / sizeof(uint64_t) - 1, n_out = milsvm_model_n_outputs(model);
    double *want = malloc(n_bags * n_out * sizeof(double));
    for (size_t i = 0; i < n_bags; i++) {
        size_t lo = ptr[i];
        check(milsvm_score_bag_f64(model, x + lo * d, ptr[i + 1] - lo, d, want + i * n_out), "score", i);
    }
    enum { N_THREADS = 8 };
    pthread_t tid[N_THREADS];
    struct job jobs[N_THREADS];
    for (int t = 0; t < N_THREADS; t++) {
        jobs[t] = (struct job){model, x, ptr, n_bags, d, n_out, rounds, want, 0, 0};
        pthread_create(&tid[t], NULL, worker, &jobs[t]);
    }
    size_t mismatches = 0, failures = 0;
    for (int t = 0; t < N_THREADS; t++) {
        pthread_join(tid[t], NULL);
        mismatches += jobs[t].mismatches;
        failures += jobs[t].failures;
    }
    printf("threads %d bags %zu rounds %zu mismatches %zu failures %zu\n", N_THREADS, n_bags, rounds,
           mismatches, failures);
    free(want), free(x), free(ptr);
    milsvm_model_free(model);
    return mismatches == 0 && failures == 0 ? 0 : 6;
}

static void report(const char *name, int rc) {
    printf("%s\t%d\t%s\n", name, rc, rc == MILSVM_OK ? "" : milsvm_last_error());
}

static int errors(int argc, char **argv) {
    if (argc != 4) return 1;
    MilsvmModel *model = load_or_die(argv[2]);
    MilsvmModel *stk = load_or_die(argv[3]);
    size_t d = milsvm_model_n_features(model);
    double x[64] = {0}, out[64];
    float xf[64] = {0};
    MilsvmModel *none = NULL;

    report("model_null", milsvm_score_bag_f64(NULL, x, 1, d, out));
    report("x_null", milsvm_score_bag_f64(model, NULL, 1, d, out));
    report("out_null", milsvm_score_bag_f64(model, x, 1, d, NULL));
    report("zero_instances", milsvm_score_bag_f64(model, x, 0, d, out));
    report("zero_features", milsvm_score_bag_f64(model, x, 1, 0, out));
    report("wrong_width", milsvm_score_bag_f64(model, x, 1, d + 1, out));
    report("wrong_width_f32", milsvm_score_bag_f32(model, xf, 1, d + 1, out));
    report("size_overflow", milsvm_score_bag_f64(model, x, SIZE_MAX / 2, d, out));
    x[1] = NAN;
    report("nan", milsvm_score_bag_f64(model, x, 2, d, out));
    x[1] = INFINITY;
    report("inf", milsvm_score_bag_f64(model, x, 2, d, out));
    x[1] = 0.0;
    xf[1] = -INFINITY;
    report("inf_f32", milsvm_score_bag_f32(model, xf, 2, d, out));
    xf[1] = 0.0f;
    x[0] = 1e300;
    report("overflow", milsvm_score_bag_f64(model, x, 1, d, out));
    x[0] = 0.0;
    report("no_probabilities", milsvm_predict_proba_bag_f64(model, x, 1, d, out));
    report("no_instance_scores", milsvm_instance_scores_f64(stk, x, 1, milsvm_model_n_features(stk), out));
    report("proba_null", milsvm_predict_proba_bag_f64(NULL, x, 1, d, out));
    report("instances_null", milsvm_instance_scores_f64(model, x, 1, d, NULL));
    report("load_path_null", milsvm_model_load(NULL, &none));
    report("load_out_null", milsvm_model_load(argv[2], NULL));
    report("json_null", milsvm_model_from_json(NULL, 3, &none));
    report("json_empty", milsvm_model_from_json("{}", 0, &none));
    report("json_not_utf8", milsvm_model_from_json("\xff\xfe", 2, &none));
    report("json_not_a_model", milsvm_model_from_json("{}", 2, &none));
    report("ok", milsvm_score_bag_f64(model, x, 1, d, out));
    /* queries of NULL give 0, freeing NULL is a no-op */
    printf("null_queries\t%zu\t%zu %zu %d\n", milsvm_model_n_features(NULL), milsvm_model_n_outputs(NULL),
           milsvm_model_n_classes(NULL), milsvm_model_has_probabilities(NULL));
    milsvm_model_free(NULL);
    printf("version\t0\t%s\n", milsvm_version());
    milsvm_model_free(model);
    milsvm_model_free(stk);
    return 0;
}

static int load(int argc, char **argv) {
    for (int i = 2; i < argc; i++) {
        MilsvmModel *model = (MilsvmModel *)1;
        int rc = milsvm_model_load(argv[i], &model);
        printf("%s\t%d\t%s\n", argv[i], rc, rc == MILSVM_OK ? "" : milsvm_last_error());
        if (rc != MILSVM_OK && model != NULL) {
            printf("%s\t-1\tout not set to NULL on failure\n", argv[i]);
        }
        milsvm_model_free(model);
    }
    return 0;
}

#ifdef MILSVM_COUNT_ALLOCS
static size_t score_all(const MilsvmModel *model, const double *x, const float *xf, const uint64_t *ptr,
                        size_t n_bags, size_t d, double *out, int inst) {
    size_t calls = 0;
    int proba = milsvm_model_has_probabilities(model);
    for (size_t i = 0; i < n_bags; i++) {
        size_t lo = ptr[i], m = ptr[i + 1] - lo;
        check(milsvm_score_bag_f64(model, x + lo * d, m, d, out), "score_bag_f64", i);
        check(milsvm_score_bag_f32(model, xf + lo * d, m, d, out), "score_bag_f32", i);
        calls += 2;
        if (inst) {
            check(milsvm_instance_scores_f64(model, x + lo * d, m, d, out), "instance_scores_f64", i);
            check(milsvm_instance_scores_f32(model, xf + lo * d, m, d, out), "instance_scores_f32", i);
            calls += 2;
        }
        if (proba) {
            check(milsvm_predict_proba_bag_f64(model, x + lo * d, m, d, out), "proba_f64", i);
            check(milsvm_predict_proba_bag_f32(model, xf + lo * d, m, d, out), "proba_f32", i);
            calls += 2;
        }
    }
    return calls;
}

static int allocs(int argc, char **argv) {
    if (argc != 8) return 1;
    size_t before = allocations();
    MilsvmModel *model = load_or_die(argv[2]);
    size_t at_load = allocations() - before;
    size_t s64, s32, sptr;
    double *x = read_file(argv[3], &s64);
    float *xf = read_file(argv[4], &s32);
    uint64_t *ptr = read_file(argv[5], &sptr);
    size_t d = (size_t)strtoull(argv[6], NULL, 10), rounds = (size_t)strtoull(argv[7], NULL, 10);
    size_t n_bags = sptr / sizeof(uint64_t) - 1, n = ptr[n_bags];
    size_t width = milsvm_model_n_outputs(model) * n + milsvm_model_n_classes(model);
    double *out = malloc(width * sizeof(double));
    /* a model without instance scores (STK) refuses them: a failure records its message */
    int inst = milsvm_instance_scores_f64(model, x, ptr[1] - ptr[0], d, out) == MILSVM_OK;
    score_all(model, x, xf, ptr, n_bags, d, out, inst); /* warm-up: the workspace grows here */
    size_t start = allocations(), calls = 0;
    for (size_t r = 0; r < rounds; r++) calls += score_all(model, x, xf, ptr, n_bags, d, out, inst);
    printf("calls %zu allocations %zu load_allocations %zu\n", calls, allocations() - start, at_load);
    free(out), free(x), free(xf), free(ptr);
    milsvm_model_free(model);
    return 0;
}
#endif

int main(int argc, char **argv) {
    if (argc < 2) return 1;
    if (!strcmp(argv[1], "score")) return score(argc, argv);
    if (!strcmp(argv[1], "threads")) return threads(argc, argv);
    if (!strcmp(argv[1], "errors")) return errors(argc, argv);
    if (!strcmp(argv[1], "load")) return load(argc, argv);
#ifdef MILSVM_COUNT_ALLOCS
    if (!strcmp(argv[1], "allocs")) return allocs(argc, argv);
#endif
    fprintf(stderr, "unknown mode %s\n", argv[1]);
    return 1;
}
