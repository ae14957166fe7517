/* A stand-in for llama.cpp's llama-bench (tests/test_bisect.py): it takes llama-bench's command line,
 * does WORK_PER_TOKEN (work.h) dependent floating-point steps per token of each test, times every
 * repetition with the monotonic clock, and prints one result in llama-bench's JSONL format (-o jsonl)
 * with its own measured times. `--version` prints its build number and commit as llama-bench does.
 * With STANDIN_CALLS set to a file, each benchmark call appends its commit there: the order of the calls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "work.h"

static double spin(long steps) {
    volatile double x = 1.0;
    for (long i = 0; i < steps; i++) x = x * 1.0000001 + 1e-9;
    return x;
}

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static const char *value(int argc, char **argv, const char *flag, const char *otherwise) {
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], flag) == 0) return argv[i + 1];
    return otherwise;
}

static int has(int argc, char **argv, const char *flag) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], flag) == 0) return 1;
    return 0;
}

int main(int argc, char **argv) {
    if (has(argc, argv, "--version")) {
        fprintf(stderr, "version: 0.0.0 (build %d, commit %s)\nbuilt with a C compiler (stand-in)\n",
                BUILD_NUMBER, BUILD_COMMIT);
        return 0;
    }
    long n_prompt = atol(value(argc, argv, "-p", "512")), n_gen = atol(value(argc, argv, "-n", "128"));
    const char *pg = value(argc, argv, "-pg", NULL);
    if (pg && sscanf(pg, "%ld,%ld", &n_prompt, &n_gen) != 2) {
        fprintf(stderr, "error: -pg %s is not PP,TG\n", pg);
        return 1;
    }
    int reps = atoi(value(argc, argv, "-r", "5"));
    long depth = atol(value(argc, argv, "-d", "0"));
    long tokens = n_prompt + n_gen;
    if (reps < 1 || tokens < 1) {
        fprintf(stderr, "error: nothing to run (-r %d, %ld tokens)\n", reps, tokens);
        return 1;
    }
    if (!has(argc, argv, "--no-warmup")) spin(tokens * (long)WORK_PER_TOKEN);
    const char *calls = getenv("STANDIN_CALLS");
    if (calls) {
        FILE *log = fopen(calls, "a");
        if (log) {
            fprintf(log, "%s\n", BUILD_COMMIT);
            fclose(log);
        }
    }
    long long *ns = calloc(reps, sizeof *ns);
    double sum = 0;
    for (int r = 0; r < reps; r++) {
        long long start = now_ns();
        spin(tokens * (long)WORK_PER_TOKEN);
        ns[r] = now_ns() - start;
        sum += ns[r];
    }
    printf("{\"build_commit\": \"%s\", \"build_number\": %d, \"cpu_info\": \"stand-in\", \"gpu_info\": \"\", "
           "\"backends\": \"CPU\", \"model_filename\": \"%s\", \"model_type\": \"stand-in\", \"n_threads\": %s, "
           "\"n_gpu_layers\": 0, \"n_prompt\": %ld, \"n_gen\": %ld, \"n_depth\": %ld, \"avg_ns\": %.0f, ",
           BUILD_COMMIT, BUILD_NUMBER, value(argc, argv, "-m", ""), value(argc, argv, "-t", "1"),
           pg ? 0L : n_prompt, pg ? 0L : n_gen, depth, sum / reps);
    printf("\"samples_ns\": [");
    for (int r = 0; r < reps; r++) printf("%s%lld", r ? ", " : "", ns[r]);
    printf("], \"samples_ts\": [");
    for (int r = 0; r < reps; r++) printf("%s%.3f", r ? ", " : "", tokens * 1e9 / (double)ns[r]);
    printf("]}\n");
    free(ns);
    return 0;
}
