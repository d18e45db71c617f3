// The libsecret floor for scripts/bench-keyring: one item, through libsecret's process-wide
// SecretService (the one secret_password_*_sync use), the cheapest way a C program reaches the
// keyring. Prints the median milliseconds per operation of:
//
//   set      SETS replacements of the item's secret with Item.SetSecret (secret_item_set_secret_sync
//            on the item, found once before timing): the request Keepsake makes to replace a record.
//   replace  REPLACES stores with secret_password_store_sync: Collection.CreateItem with replace
//            (and, on a provider that answers CreateItem with a prompt, Prompt.Prompt).
//   get      GETS lookups with secret_password_lookup_sync.
//
//   cc -O2 bench/secret-floor.c $(pkg-config --cflags --libs libsecret-1) -o secret-floor
//   secret-floor SERVICE GETS SETS REPLACES
//
// SERVICE should be new for each run: the item is created first (CreateItem of a new item, which
// no provider prompts for), and only this process replaces it. KeePassXC asks the user before a
// CreateItem replaces an item another client created; headless, nobody answers. Every call has
// a deadline (SECRET_FLOOR_DEADLINE seconds, default 20): a call that does not answer in time
// ends the program with status 124 and names the call, instead of hanging the bench.
#include <libsecret/secret.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const SecretSchema record = {
    "org.keepsake.Record", SECRET_SCHEMA_DONT_MATCH_NAME,
    {{"service", SECRET_SCHEMA_ATTRIBUTE_STRING}, {"username", SECRET_SCHEMA_ATTRIBUTE_STRING}, {NULL, 0}},
};

static const char *volatile phase = "start";
static unsigned deadline = 20;

static void expired(int signal) {
    (void)signal;
    const char *parts[] = {"secret-floor: ", phase, " did not answer within the deadline (a prompt nobody answers?)\n"};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
        ssize_t ignored = write(STDERR_FILENO, parts[i], strlen(parts[i]));
        (void)ignored;
    }
    _exit(124);
}

static void begin(const char *what) {
    phase = what;
    alarm(deadline);
}

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
    alarm(0);
    if (error == NULL) return;
    fprintf(stderr, "secret-floor: %s: %s\n", what, error->message);
    exit(1);
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: secret-floor SERVICE GETS SETS REPLACES\n");
        return 64;
    }
    const char *service = argv[1];
    int gets = atoi(argv[2]), sets = atoi(argv[3]), replaces = atoi(argv[4]);
    const char *limit = getenv("SECRET_FLOOR_DEADLINE");
    if (limit != NULL && atoi(limit) > 0) deadline = (unsigned)atoi(limit);
    signal(SIGALRM, expired);
    const char *records[2] = {
        "{\"data\":{\"alias\":\"Ada\",\"email\":\"ada@example.com\"},\"schema\":\"Person\",\"version\":3}",
        "{\"data\":{\"alias\":\"Bob\",\"email\":\"bob@example.com\"},\"schema\":\"Person\",\"version\":3}",
    };
    GError *error = NULL;
    int most = gets > sets ? gets : sets;
    double *samples = calloc((most > replaces ? most : replaces) + 1, sizeof(double));

    // The item is created, found, and the shared service and its session are open before timing.
    begin("the first store (CreateItem of a new item)");
    secret_password_store_sync(&record, SECRET_COLLECTION_DEFAULT, "bench", records[0], NULL, &error,
                               "service", service, "username", "bench", NULL);
    check(error, "store");
    begin("opening the shared service");
    SecretService *secrets = secret_service_get_sync(SECRET_SERVICE_OPEN_SESSION, NULL, &error);
    check(error, "service");
    GHashTable *attributes = g_hash_table_new(g_str_hash, g_str_equal);
    g_hash_table_insert(attributes, "service", (gpointer)service);
    g_hash_table_insert(attributes, "username", "bench");
    begin("the search for the item (SearchItems)");
    GList *found = secret_service_search_sync(secrets, &record, attributes, SECRET_SEARCH_NONE, NULL, &error);
    check(error, "search");
    if (found == NULL) {
        fprintf(stderr, "secret-floor: the item just stored is not found\n");
        return 1;
    }
    SecretItem *item = found->data;
    SecretValue *values[2] = {secret_value_new(records[0], -1, "text/plain"),
                              secret_value_new(records[1], -1, "text/plain")};

    for (int i = 0; i < sets; i++) {
        double start = now_ms();
        begin("a set (Item.SetSecret)");
        secret_item_set_secret_sync(item, values[(i + 1) % 2], NULL, &error);
        samples[i] = now_ms() - start;
        check(error, "set");
    }
    printf("set %.3f\n", median(samples, sets));
    for (int i = 0; i < replaces; i++) {
        double start = now_ms();
        begin("a replace (CreateItem with replace)");
        secret_password_store_sync(&record, SECRET_COLLECTION_DEFAULT, "bench", records[(sets + i + 1) % 2], NULL,
                                   &error, "service", service, "username", "bench", NULL);
        samples[i] = now_ms() - start;
        check(error, "replace");
    }
    printf("replace %.3f\n", median(samples, replaces));
    for (int i = 0; i < gets; i++) {
        double start = now_ms();
        begin("a get (secret_password_lookup_sync)");
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
    secret_value_unref(values[0]);
    secret_value_unref(values[1]);
    g_list_free_full(found, g_object_unref);
    g_hash_table_unref(attributes);
    g_object_unref(secrets);
    free(samples);
    return 0;
}
