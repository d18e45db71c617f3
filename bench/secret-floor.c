// The libsecret floor for scripts/bench-keyring: GETS lookups and SETS stores of one item through
// libsecret's process-wide SecretService (what secret_password_*_sync use), the cheapest way a C
// program reaches the keyring. Prints the median milliseconds per operation.
//
//   cc -O2 bench/secret-floor.c $(pkg-config --cflags --libs libsecret-1) -o secret-floor
//   secret-floor SERVICE GETS SETS
#include <libsecret/secret.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static const SecretSchema record = {
    "org.keepsake.Record", SECRET_SCHEMA_DONT_MATCH_NAME,
    {{"service", SECRET_SCHEMA_ATTRIBUTE_STRING}, {"username", SECRET_SCHEMA_ATTRIBUTE_STRING}, {NULL, 0}},
};

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *samples, int count) {
    if (count == 0) return 0;
    qsort(samples, count, sizeof *samples, by_value);
    return samples[count / 2];
}

static void check(GError *error, const char *what) {
    if (error == NULL) return;
    fprintf(stderr, "secret-floor: %s: %s\n", what, error->message);
    exit(1);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: secret-floor SERVICE GETS SETS\n");
        return 64;
    }
    const char *service = argv[1];
    int gets = atoi(argv[2]), sets = atoi(argv[3]);
    const char *records[2] = {
        "{\"data\":{\"alias\":\"Ada\",\"email\":\"ada@example.com\"},\"schema\":\"Person\",\"version\":3}",
        "{\"data\":{\"alias\":\"Bob\",\"email\":\"bob@example.com\"},\"schema\":\"Person\",\"version\":3}",
    };
    GError *error = NULL;
    double *samples = calloc((gets > sets ? gets : sets) + 1, sizeof(double));
    // The item exists before timing starts, and the shared service and its session are open.
    secret_password_store_sync(&record, SECRET_COLLECTION_DEFAULT, "bench", records[0], NULL, &error,
                               "service", service, "username", "bench", NULL);
    check(error, "store");
    for (int i = 0; i < sets; i++) {
        double start = now_ms();
        secret_password_store_sync(&record, SECRET_COLLECTION_DEFAULT, "bench", records[(i + 1) % 2], NULL, &error,
                                   "service", service, "username", "bench", NULL);
        samples[i] = now_ms() - start;
        check(error, "store");
    }
    printf("set %.3f\n", median(samples, sets));
    for (int i = 0; i < gets; i++) {
        double start = now_ms();
        gchar *secret = secret_password_lookup_sync(&record, NULL, &error, "service", service, "username", "bench", NULL);
        samples[i] = now_ms() - start;
        check(error, "lookup");
        if (secret == NULL) {
            fprintf(stderr, "secret-floor: the item is missing\n");
            return 1;
        }
        secret_password_free(secret);
    }
    printf("get %.3f\n", median(samples, gets));
    free(samples);
    return 0;
}
