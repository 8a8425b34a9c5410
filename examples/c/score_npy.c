/*
 * Scores bags saved as .npy files with a saved model through the C library (libmilsvm_c,
 * capi/include/milsvm.h): the last step of the tutorial "From a CLAM folder to a paper's numbers
 * and heatmaps" (docs/tutorials/clam-folder.md).
 *
 *   cargo build --release -p milsvm-capi
 *   cc -std=c11 -O2 -Icapi/include examples/c/score_npy.c -Ltarget/release -lmilsvm_c \
 *       -Wl,-rpath,"$PWD/target/release" -o score_npy
 *   ./score_npy MODEL.json BAG.npy [BAG.npy ...]
 *
 * MODEL.json is a model file written by milsvm (milsvm fit, milsvm.save, est.save). Each BAG.npy
 * is one bag: a 2-D array with one row per instance (a slide's patch embeddings), of
 * little-endian float32 or float64 values in C order, as numpy.save writes them. Prints one line
 * per file, tab-separated: the file's name without ".npy", then the bag's scores (one per output,
 * "%.17g", which reads back to the same double): Python's decision_function for that bag, bit
 * for bit. A model saved with its scaler standardises the bag inside the library.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "milsvm.h"

/* A .npy array: 2-D, float32 (width 4) or float64 (width 8), C order. */
typedef struct {
    unsigned char *bytes; /* the whole file */
    const void *data;     /* the values, inside bytes */
    size_t rows, cols, width;
} Npy;

/* Reads a .npy file (format versions 1 to 3) into *out; returns 0, or -1 after a message. */
static int read_npy(const char *path, Npy *out) {
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    size_t size = 0, cap = 1 << 16;
    unsigned char *bytes = malloc(cap);
    for (size_t n; bytes && (n = fread(bytes + size, 1, cap - size, f)) > 0;) {
        size += n;
        if (size == cap) {
            unsigned char *bigger = realloc(bytes, cap *= 2);
            if (!bigger) free(bytes);
            bytes = bigger;
        }
    }
    fclose(f);
    if (!bytes) {
        fprintf(stderr, "%s: out of memory\n", path);
        return -1;
    }
    out->bytes = bytes;
    /* version 1 has a 2-byte header length, versions 2 and 3 a 4-byte one */
    size_t start = 0, header_len = 0;
    if (size >= 10 && memcmp(bytes, "\x93NUMPY", 6) == 0 && bytes[6] == 1) {
        start = 10;
        header_len = bytes[8] | (size_t)bytes[9] << 8;
    } else if (size >= 12 && memcmp(bytes, "\x93NUMPY", 6) == 0 && (bytes[6] == 2 || bytes[6] == 3)) {
        start = 12;
        header_len = bytes[8] | (size_t)bytes[9] << 8 | (size_t)bytes[10] << 16 | (size_t)bytes[11] << 24;
    }
    if (start == 0 || header_len > size - start) {
        fprintf(stderr, "%s: not a .npy file\n", path);
        return -1;
    }
    /* the header is a Python dict literal: compare it without its spaces */
    char *header = malloc(header_len + 1);
    if (!header) {
        fprintf(stderr, "%s: out of memory\n", path);
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < header_len; i++) {
        char c = (char)bytes[start + i];
        if (c != ' ' && c != '\n') header[k++] = c;
    }
    header[k] = '\0';
    const char *shape = strstr(header, "'shape':(");
    unsigned long long rows = 0, cols = 0;
    char close = 0;
    out->width = strstr(header, "'descr':'<f4'") ? 4 : strstr(header, "'descr':'<f8'") ? 8 : 0;
    int ok = out->width && strstr(header, "'fortran_order':False") && shape &&
             sscanf(shape, "'shape':(%llu,%llu%c", &rows, &cols, &close) == 3 && close == ')';
    free(header);
    out->rows = (size_t)rows;
    out->cols = (size_t)cols;
    if (!ok || (size - start - header_len) / out->width / (cols ? cols : 1) != rows ||
        rows * cols * out->width != size - start - header_len) {
        fprintf(stderr, "%s: not a 2-D float32 or float64 C-order .npy array\n", path);
        return -1;
    }
    out->data = bytes + start + header_len;
    return 0;
}

/* The file's name without its folder and its ".npy". */
static void print_name(const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base);
    if (n > 4 && strcmp(base + n - 4, ".npy") == 0) n -= 4;
    printf("%.*s", (int)n, base);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: score_npy MODEL.json BAG.npy [BAG.npy ...]\n");
        return 2;
    }
    MilsvmModel *model = NULL;
    if (milsvm_model_load(argv[1], &model) != 0) {
        fprintf(stderr, "score_npy: %s\n", milsvm_last_error());
        return 1;
    }
    size_t n_outputs = milsvm_model_n_outputs(model);
    double *scores = malloc(n_outputs * sizeof *scores);
    int status = scores ? 0 : 1;
    for (int i = 2; i < argc && status == 0; i++) {
        Npy bag;
        if (read_npy(argv[i], &bag) != 0) {
            status = 1;
        } else {
            /* float32 values are read exactly into double arithmetic, as by Python */
            int code = bag.width == 4
                           ? milsvm_score_bag_f32(model, bag.data, bag.rows, bag.cols, scores)
                           : milsvm_score_bag_f64(model, bag.data, bag.rows, bag.cols, scores);
            if (code != 0) {
                fprintf(stderr, "score_npy: %s: %s\n", argv[i], milsvm_last_error());
                status = 1;
            } else {
                print_name(argv[i]);
                for (size_t j = 0; j < n_outputs; j++) printf("\t%.17g", scores[j]);
                printf("\n");
            }
        }
        free(bag.bytes);
    }
    free(scores);
    milsvm_model_free(model);
    return status;
}
