// libsecret, plus the few Secret Service calls KeepsakeKeyring makes itself over one private
// D-Bus connection (GVariant building and GLib's variadic constructors cannot be called from Swift).
//
// The GLib and libsecret API comes from glib-subset.h, our own declarations of exactly what is
// used here and in KeepsakeKeyring, not from <libsecret/secret.h>: see there why, and how
// scripts/check-clibsecret proves them equal to the real headers. So GLib's function-like
// macros are spelled out below: g_signal_connect as g_signal_connect_data, g_new0 as
// g_malloc0_n, g_atomic_int_* as the compiler's atomics GLib's expand to, SECRET_TYPE_SERVICE as
// secret_service_get_type(), and the checked casts (G_DBUS_PROXY, G_DBUS_CONNECTION) as plain
// casts of objects whose type is known.
#include "glib-subset.h"

#define KEEPSAKE_SECRETS_NAME "org.freedesktop.secrets"
#define KEEPSAKE_SECRETS_PATH "/org/freedesktop/secrets"

static inline void keepsake_stop_properties_changed(GDBusProxy *proxy, GVariant *changed, const gchar *const *invalidated,
                                                    gpointer data) {
    g_signal_stop_emission_by_name(proxy, "g-properties-changed");
}

static inline void keepsake_stop_signal(GDBusProxy *proxy, const gchar *sender, const gchar *name, GVariant *parameters,
                                        gpointer data) {
    g_signal_stop_emission_by_name(proxy, "g-signal");
}

/// A SecretService proxy with an open session (encrypted when the provider allows), on the
/// process's session-bus connection. Its unique bus name is in `owner` (the caller's, g_free):
/// every later request is addressed to that name, so a session opened with one daemon is never
/// presented to its successor.
///
/// What secret_service_open_sync makes, minus the provider's signals and cached properties,
/// which nothing here reads: libsecret's class handlers for them crash when KeePassXC is
/// restarted (a NULL variant iterated while `g-properties-changed` is emitted), so neither
/// signal ever reaches them. What the proxy still subscribes to (its name's owner) is
/// delivered to `context`, which the caller drains with keepsake_drain.
static inline SecretService *keepsake_service_open(GMainContext *context, GCancellable *cancellable,
                                                   gchar **owner, GError **error) {
    g_main_context_push_thread_default(context);
    SecretService *service = g_initable_new(
        secret_service_get_type(), cancellable, error,
        "g-flags", G_DBUS_PROXY_FLAGS_DO_NOT_CONNECT_SIGNALS | G_DBUS_PROXY_FLAGS_DO_NOT_LOAD_PROPERTIES,
        "g-name", KEEPSAKE_SECRETS_NAME, "g-bus-type", G_BUS_TYPE_SESSION, "g-object-path", KEEPSAKE_SECRETS_PATH,
        "g-interface-name", "org.freedesktop.Secret.Service", "flags", SECRET_SERVICE_OPEN_SESSION, NULL);
    g_main_context_pop_thread_default(context);
    if (service == NULL) return NULL;
    // Connected before the class handlers run (they run last): emission stops here.
    g_signal_connect_data(service, "g-properties-changed", (GCallback)keepsake_stop_properties_changed, NULL, NULL,
                          (GConnectFlags)0);
    g_signal_connect_data(service, "g-signal", (GCallback)keepsake_stop_signal, NULL, NULL, (GConnectFlags)0);
    *owner = g_dbus_proxy_get_name_owner((GDBusProxy *)service);
    return service;
}

/// The connection `service` talks on (a new reference).
static inline GDBusConnection *keepsake_service_bus(SecretService *service) {
    return (GDBusConnection *)g_object_ref(g_dbus_proxy_get_connection((GDBusProxy *)service));
}

/// Dispatches what is pending on `context` (signals for the proxy), without waiting.
static inline void keepsake_drain(GMainContext *context) {
    while (g_main_context_iteration(context, FALSE)) {}
}

/// `attributes` (a GHashTable of UTF-8 strings) as a floating a{ss} GVariant.
static inline GVariant *keepsake_string_table(GHashTable *attributes) {
    GVariantBuilder builder;
    g_variant_builder_init(&builder, G_VARIANT_TYPE("a{ss}"));
    GHashTableIter iter;
    gpointer name, value;
    g_hash_table_iter_init(&iter, attributes);
    while (g_hash_table_iter_next(&iter, &name, &value)) g_variant_builder_add(&builder, "{ss}", name, value);
    return g_variant_builder_end(&builder);
}

/// Service.SearchItems: the unlocked and the locked items whose attributes include `attributes`
/// (a GHashTable of UTF-8 strings). The string vectors are the caller's (g_strfreev).
static inline gboolean keepsake_search(GDBusConnection *bus, const gchar *dest, GHashTable *attributes, GCancellable *cancellable,
                                       gchar ***unlocked, gchar ***locked, GError **error) {
    GVariant *reply = g_dbus_connection_call_sync(
        bus, dest, KEEPSAKE_SECRETS_PATH, "org.freedesktop.Secret.Service", "SearchItems",
        g_variant_new("(@a{ss})", keepsake_string_table(attributes)), G_VARIANT_TYPE("(aoao)"), G_DBUS_CALL_FLAGS_NONE,
        -1, cancellable, error);
    if (reply == NULL) return FALSE;
    g_variant_get(reply, "(^ao^ao)", unlocked, locked);
    g_variant_unref(reply);
    return TRUE;
}

/// Service.ReadAlias: the collection path behind `alias`, or NULL with no error when the alias
/// is not set. The string is the caller's (g_free).
static inline gchar *keepsake_read_alias(GDBusConnection *bus, const gchar *dest, const gchar *alias, GCancellable *cancellable,
                                         GError **error) {
    GVariant *reply = g_dbus_connection_call_sync(
        bus, dest, KEEPSAKE_SECRETS_PATH, "org.freedesktop.Secret.Service", "ReadAlias",
        g_variant_new("(s)", alias), G_VARIANT_TYPE("(o)"), G_DBUS_CALL_FLAGS_NONE, -1, cancellable, error);
    if (reply == NULL) return NULL;
    gchar *path = NULL;
    g_variant_get(reply, "(o)", &path);
    g_variant_unref(reply);
    if (path != NULL && g_strcmp0(path, "/") == 0) {
        g_free(path);
        path = NULL;
    }
    return path;
}

/// The `Locked` property of the collection at `path`: 1 locked, 0 unlocked, -1 failed.
static inline int keepsake_collection_locked(GDBusConnection *bus, const gchar *dest, const gchar *path, GCancellable *cancellable,
                                             GError **error) {
    GVariant *reply = g_dbus_connection_call_sync(
        bus, dest, path, "org.freedesktop.DBus.Properties", "Get",
        g_variant_new("(ss)", "org.freedesktop.Secret.Collection", "Locked"), G_VARIANT_TYPE("(v)"),
        G_DBUS_CALL_FLAGS_NONE, -1, cancellable, error);
    if (reply == NULL) return -1;
    GVariant *boxed = NULL;
    g_variant_get(reply, "(v)", &boxed);
    g_variant_unref(reply);
    int locked = 1;  // anything but a boolean false counts as locked: never mistaken for open
    if (boxed != NULL && g_variant_is_of_type(boxed, G_VARIANT_TYPE_BOOLEAN)) locked = g_variant_get_boolean(boxed) ? 1 : 0;
    if (boxed != NULL) g_variant_unref(boxed);
    return locked;
}

/// One reply of a batch of calls sent together.
typedef struct {
    GVariant *reply;
    GError *error;
    gboolean done;
} KeepsakeReply;

static inline void keepsake_reply_arrived(GObject *source, GAsyncResult *result, gpointer data) {
    KeepsakeReply *slot = (KeepsakeReply *)data;
    slot->reply = g_dbus_connection_call_finish((GDBusConnection *)source, result, &slot->error);
    slot->done = TRUE;
}

/// Reads items in one round trip of pipelined calls: Properties.GetAll on each of the `count`
/// paths (into `properties[i]`, each an `a{sv}` the caller unrefs) and, when `service` is not
/// NULL, Service.GetSecrets on all of them (into `secrets`, a `(a{o(oayays)})` the caller
/// unrefs). Every call is sent before any reply is awaited; all share `cancellable`. On
/// failure, the first error in sending order is returned and nothing is left to release.
static inline gboolean keepsake_read_items(GDBusConnection *bus, const gchar *dest, SecretService *service, const gchar *const *paths,
                                           guint count, GCancellable *cancellable, GVariant **properties,
                                           GVariant **secrets, GError **error) {
    GMainContext *context = g_main_context_new();
    g_main_context_push_thread_default(context);
    KeepsakeReply *slots = (KeepsakeReply *)g_malloc0_n(count + 1, sizeof(KeepsakeReply));
    guint total = count + (service != NULL ? 1 : 0);
    for (guint i = 0; i < count; i++) {
        g_dbus_connection_call(bus, dest, paths[i], "org.freedesktop.DBus.Properties", "GetAll",
                               g_variant_new("(s)", "org.freedesktop.Secret.Item"), G_VARIANT_TYPE("(a{sv})"),
                               G_DBUS_CALL_FLAGS_NONE, -1, cancellable, keepsake_reply_arrived, &slots[i]);
    }
    if (service != NULL) {
        g_dbus_connection_call(bus, dest, KEEPSAKE_SECRETS_PATH, "org.freedesktop.Secret.Service",
                               "GetSecrets",
                               g_variant_new("(^ao@o)", paths, g_variant_new_object_path(
                                   secret_service_get_session_dbus_path(service))),
                               G_VARIANT_TYPE("(a{o(oayays)})"), G_DBUS_CALL_FLAGS_NONE, -1, cancellable,
                               keepsake_reply_arrived, &slots[count]);
    }
    for (guint i = 0; i < total; i++) {
        while (!slots[i].done) g_main_context_iteration(context, TRUE);
    }
    g_main_context_pop_thread_default(context);
    g_main_context_unref(context);
    gboolean ok = TRUE;
    for (guint i = 0; i < total; i++) {
        if (slots[i].error != NULL) {
            if (ok) g_propagate_error(error, slots[i].error); else g_error_free(slots[i].error);
            ok = FALSE;
        }
    }
    for (guint i = 0; i < total; i++) {
        if (slots[i].reply == NULL) continue;
        if (!ok) { g_variant_unref(slots[i].reply); continue; }
        if (i < count) {
            g_variant_get(slots[i].reply, "(@a{sv})", &properties[i]);
        } else {
            g_variant_get(slots[i].reply, "(@a{o(oayays)})", secrets);
        }
        g_variant_unref(slots[i].reply);
    }
    g_free(slots);
    return ok;
}

/// The `Attributes` of an item's GetAll answer, as a new GHashTable of UTF-8 strings (empty
/// when the answer has none).
static inline GHashTable *keepsake_properties_attributes(GVariant *properties) {
    GHashTable *table = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    GVariant *attributes = g_variant_lookup_value(properties, "Attributes", G_VARIANT_TYPE("a{ss}"));
    if (attributes == NULL) return table;
    GVariantIter iter;
    gchar *name, *value;
    g_variant_iter_init(&iter, attributes);
    while (g_variant_iter_next(&iter, "{ss}", &name, &value)) g_hash_table_replace(table, name, value);
    g_variant_unref(attributes);
    return table;
}

/// An unsigned 64-bit property (`Modified`, `Created`) of a GetAll answer, 0 when absent.
static inline guint64 keepsake_properties_uint64(GVariant *properties, const gchar *name) {
    guint64 value = 0;
    if (!g_variant_lookup(properties, name, "t", &value)) return 0;
    return value;
}

/// A boolean property (`Locked`) of a GetAll answer: 1, 0, or -1 when absent.
static inline int keepsake_properties_bool(GVariant *properties, const gchar *name) {
    gboolean value = FALSE;
    if (!g_variant_lookup(properties, name, "b", &value)) return -1;
    return value ? 1 : 0;
}

/// The secret GetSecrets returned for `path`, decrypted with `service`'s session: a new
/// SecretValue, or NULL when there is none for that path or it cannot be decoded. `listed`
/// tells the two apart: TRUE when the answer held a secret for `path` (so NULL means it could
/// not be decoded with the session's key).
static inline SecretValue *keepsake_secret_for_path(SecretService *service, GVariant *secrets, const gchar *path,
                                                    gboolean *listed) {
    GVariant *encoded = g_variant_lookup_value(secrets, path, G_VARIANT_TYPE("(oayays)"));
    *listed = encoded != NULL;
    if (encoded == NULL) return NULL;
    SecretValue *value = secret_service_decode_dbus_secret(service, encoded);
    g_variant_unref(encoded);
    return value;
}

/// Item.SetSecret: replaces the secret of the item at `path`, encrypted with the session.
static inline gboolean keepsake_set_secret(GDBusConnection *bus, const gchar *dest, SecretService *service, const gchar *path,
                                           SecretValue *value, GCancellable *cancellable, GError **error) {
    GVariant *encoded = g_variant_ref_sink(secret_service_encode_dbus_secret(service, value));
    GVariant *reply = g_dbus_connection_call_sync(
        bus, dest, path, "org.freedesktop.Secret.Item", "SetSecret",
        g_variant_new("(@(oayays))", encoded), G_VARIANT_TYPE("()"), G_DBUS_CALL_FLAGS_NONE, -1, cancellable, error);
    g_variant_unref(encoded);
    if (reply == NULL) return FALSE;
    g_variant_unref(reply);
    return TRUE;
}

/// Item.SetSecret on the item at `path`, and Item.GetSecret of it sent right behind, before
/// either answer is awaited: one round trip for a write and its read-back. Returns FALSE with
/// `error` set when SetSecret failed (the read-back's answer is then dropped). When it
/// succeeded, `*back` is the secret the GetSecret answer held, decoded (a new SecretValue), or
/// NULL: then `*read_error` says why (the caller's to free), or is NULL when the answer could
/// not be decoded with the session's key.
///
/// The bus delivers the two requests in the order sent; whether the provider answers the
/// GetSecret after it applied the SetSecret is the provider's affair, so an answer that is not
/// the secret written proves nothing until it is read again on its own (KeyringStore does).
static inline gboolean keepsake_set_secret_read_back(GDBusConnection *bus, const gchar *dest, SecretService *service,
                                                     const gchar *path, SecretValue *value, GCancellable *cancellable,
                                                     SecretValue **back, GError **read_error, GError **error) {
    GMainContext *context = g_main_context_new();
    g_main_context_push_thread_default(context);
    KeepsakeReply slots[2] = {{NULL, NULL, FALSE}, {NULL, NULL, FALSE}};
    GVariant *encoded = g_variant_ref_sink(secret_service_encode_dbus_secret(service, value));
    g_dbus_connection_call(bus, dest, path, "org.freedesktop.Secret.Item", "SetSecret",
                           g_variant_new("(@(oayays))", encoded), G_VARIANT_TYPE("()"), G_DBUS_CALL_FLAGS_NONE, -1,
                           cancellable, keepsake_reply_arrived, &slots[0]);
    g_dbus_connection_call(bus, dest, path, "org.freedesktop.Secret.Item", "GetSecret",
                           g_variant_new("(o)", secret_service_get_session_dbus_path(service)),
                           G_VARIANT_TYPE("((oayays))"), G_DBUS_CALL_FLAGS_NONE, -1, cancellable,
                           keepsake_reply_arrived, &slots[1]);
    g_variant_unref(encoded);
    while (!slots[0].done || !slots[1].done) g_main_context_iteration(context, TRUE);
    g_main_context_pop_thread_default(context);
    g_main_context_unref(context);
    *back = NULL;
    *read_error = NULL;
    if (slots[0].error != NULL) {
        g_propagate_error(error, slots[0].error);
        if (slots[1].reply != NULL) g_variant_unref(slots[1].reply);
        if (slots[1].error != NULL) g_error_free(slots[1].error);
        return FALSE;
    }
    g_variant_unref(slots[0].reply);
    if (slots[1].error != NULL) {
        *read_error = slots[1].error;
        return TRUE;
    }
    GVariant *secret = g_variant_get_child_value(slots[1].reply, 0);
    *back = secret_service_decode_dbus_secret(service, secret);
    g_variant_unref(secret);
    g_variant_unref(slots[1].reply);
    return TRUE;
}

/// Item.GetSecret of the item at `path` with `service`'s session, decoded: a new SecretValue,
/// or NULL with `error` set on failure, or NULL without an error when the answer cannot be
/// decoded. Never unlocks anything.
static inline SecretValue *keepsake_get_secret(GDBusConnection *bus, const gchar *dest, SecretService *service, const gchar *path,
                                               GCancellable *cancellable, GError **error) {
    GVariant *reply = g_dbus_connection_call_sync(
        bus, dest, path, "org.freedesktop.Secret.Item", "GetSecret",
        g_variant_new("(o)", secret_service_get_session_dbus_path(service)), G_VARIANT_TYPE("((oayays))"),
        G_DBUS_CALL_FLAGS_NONE, -1, cancellable, error);
    if (reply == NULL) return NULL;
    GVariant *encoded = g_variant_get_child_value(reply, 0);
    SecretValue *value = secret_service_decode_dbus_secret(service, encoded);
    g_variant_unref(encoded);
    g_variant_unref(reply);
    return value;
}

/// The state of one prompt run by keepsake_run_prompt.
typedef struct {
    gboolean completed;
    gboolean dismissed;
    GVariant *result;
    gboolean expired;
} KeepsakePrompt;

static inline void keepsake_prompt_completed(GDBusConnection *bus, const gchar *sender, const gchar *path,
                                             const gchar *interface, const gchar *signal, GVariant *parameters,
                                             gpointer data) {
    KeepsakePrompt *prompt = (KeepsakePrompt *)data;
    if (prompt->completed || !g_variant_is_of_type(parameters, G_VARIANT_TYPE("(bv)"))) return;
    prompt->completed = TRUE;
    g_variant_get(parameters, "(bv)", &prompt->dismissed, &prompt->result);
}

static inline gboolean keepsake_prompt_expired(GCancellable *cancellable, gpointer data) {
    ((KeepsakePrompt *)data)->expired = TRUE;
    return G_SOURCE_REMOVE;
}

/// Runs the prompt at `path` (Prompt.Prompt with no parent window) and waits for its
/// `Completed` signal until `cancellable` is cancelled (the call's deadline); a prompt still
/// open then is dismissed (Prompt.Dismiss, best effort, half a second). Returns 1 when it
/// completed (its result in `result`, the caller's to unref), 0 when the provider reports it
/// dismissed (a refusal; nothing was done), 2 when the deadline came first, -1 on failure.
static inline int keepsake_run_prompt(GDBusConnection *bus, const gchar *dest, const gchar *path,
                                      GCancellable *cancellable, GVariant **result, GError **error) {
    GMainContext *context = g_main_context_new();
    g_main_context_push_thread_default(context);
    KeepsakePrompt *prompt = (KeepsakePrompt *)g_malloc0_n(1, sizeof(KeepsakePrompt));
    // Subscribed before the prompt is started, on this thread's context: the signal cannot be missed.
    guint subscription = g_dbus_connection_signal_subscribe(
        bus, dest, "org.freedesktop.Secret.Prompt", "Completed", path, NULL, G_DBUS_SIGNAL_FLAGS_NONE,
        keepsake_prompt_completed, prompt, NULL);
    GSource *deadline = g_cancellable_source_new(cancellable);
    g_source_set_callback(deadline, (GSourceFunc)(void (*)(void))keepsake_prompt_expired, prompt, NULL);
    g_source_attach(deadline, context);
    int outcome;
    GVariant *reply = g_dbus_connection_call_sync(
        bus, dest, path, "org.freedesktop.Secret.Prompt", "Prompt", g_variant_new("(s)", ""), G_VARIANT_TYPE("()"),
        G_DBUS_CALL_FLAGS_NONE, -1, cancellable, error);
    if (reply == NULL) {
        outcome = -1;
    } else {
        g_variant_unref(reply);
        while (!prompt->completed && !prompt->expired && !g_cancellable_is_cancelled(cancellable)) {
            g_main_context_iteration(context, TRUE);
        }
        if (prompt->completed) {
            outcome = prompt->dismissed ? 0 : 1;
        } else {
            outcome = 2;
            GVariant *dismissed = g_dbus_connection_call_sync(
                bus, dest, path, "org.freedesktop.Secret.Prompt", "Dismiss", NULL, NULL, G_DBUS_CALL_FLAGS_NONE, 500,
                NULL, NULL);
            if (dismissed != NULL) g_variant_unref(dismissed);
        }
    }
    g_dbus_connection_signal_unsubscribe(bus, subscription);
    g_source_destroy(deadline);
    g_source_unref(deadline);
    while (g_main_context_iteration(context, FALSE)) {}
    g_main_context_pop_thread_default(context);
    g_main_context_unref(context);
    if (outcome == 1 && result != NULL) *result = prompt->result; else if (prompt->result != NULL) g_variant_unref(prompt->result);
    // Freed only after the subscription is gone and its context drained: no callback can still run.
    g_free(prompt);
    return outcome;
}

/// The object path inside a prompt's result (a `v` holding an `o`), or NULL (the caller's, g_free).
static inline gchar *keepsake_prompt_result_path(GVariant *result) {
    if (result == NULL || !g_variant_is_of_type(result, G_VARIANT_TYPE_OBJECT_PATH)) return NULL;
    return g_variant_dup_string(result, NULL);
}

/// Collection.CreateItem with a label and string attributes, replacing an item with exactly
/// these attributes when `replace` is set. Returns 1 when created, 0 when the provider asks for
/// a prompt first (nothing created yet: see keepsake_run_prompt), -1 on failure. `created_path`
/// gets the new item's path (on 1) or the prompt's (on 0), the caller's to g_free.
static inline int keepsake_create_item(GDBusConnection *bus, const gchar *dest, SecretService *service, const gchar *collection,
                                       GHashTable *attributes, const gchar *label, SecretValue *value, gboolean replace,
                                       gchar **created_path, GCancellable *cancellable, GError **error) {
    GVariantBuilder properties;
    g_variant_builder_init(&properties, G_VARIANT_TYPE("a{sv}"));
    g_variant_builder_add(&properties, "{sv}", "org.freedesktop.Secret.Item.Label", g_variant_new_string(label));
    g_variant_builder_add(&properties, "{sv}", "org.freedesktop.Secret.Item.Attributes", keepsake_string_table(attributes));
    GVariant *encoded = g_variant_ref_sink(secret_service_encode_dbus_secret(service, value));
    GVariant *reply = g_dbus_connection_call_sync(
        bus, dest, collection, "org.freedesktop.Secret.Collection", "CreateItem",
        g_variant_new("(a{sv}@(oayays)b)", &properties, encoded, replace), G_VARIANT_TYPE("(oo)"),
        G_DBUS_CALL_FLAGS_NONE, -1, cancellable, error);
    g_variant_unref(encoded);
    if (reply == NULL) return -1;
    const gchar *item = NULL, *prompt = NULL;
    g_variant_get(reply, "(&o&o)", &item, &prompt);
    int created = g_strcmp0(prompt, "/") == 0 ? 1 : 0;
    if (created_path != NULL) *created_path = g_strdup(created ? item : prompt);
    g_variant_unref(reply);
    return created;
}

/// Item.Delete. Returns 1 when deleted, 0 when the provider asks for a prompt first (nothing
/// deleted yet; its path in `prompt_path`, the caller's to g_free), -1 on failure.
static inline int keepsake_delete_item(GDBusConnection *bus, const gchar *dest, const gchar *path, gchar **prompt_path,
                                       GCancellable *cancellable, GError **error) {
    GVariant *reply = g_dbus_connection_call_sync(
        bus, dest, path, "org.freedesktop.Secret.Item", "Delete", NULL, G_VARIANT_TYPE("(o)"),
        G_DBUS_CALL_FLAGS_NONE, -1, cancellable, error);
    if (reply == NULL) return -1;
    const gchar *prompt = NULL;
    g_variant_get(reply, "(&o)", &prompt);
    int deleted = g_strcmp0(prompt, "/") == 0 ? 1 : 0;
    if (!deleted && prompt_path != NULL) *prompt_path = g_strdup(prompt);
    g_variant_unref(reply);
    return deleted;
}

/// org.freedesktop.DBus.GetConnectionUnixProcessID: the process ID of the connection with the
/// unique name `owner`, asked of the bus itself (never of the provider: nothing can prompt).
/// Returns FALSE with `error` set on failure.
static inline gboolean keepsake_owner_pid(GDBusConnection *bus, const gchar *owner, GCancellable *cancellable, guint32 *pid,
                                          GError **error) {
    GVariant *reply = g_dbus_connection_call_sync(
        bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetConnectionUnixProcessID",
        g_variant_new("(s)", owner), G_VARIANT_TYPE("(u)"), G_DBUS_CALL_FLAGS_NONE, -1, cancellable, error);
    if (reply == NULL) return FALSE;
    g_variant_get(reply, "(u)", pid);
    g_variant_unref(reply);
    return TRUE;
}

/// The D-Bus error name of a remote error (`org.freedesktop.Secret.Error.NoSession`), or NULL.
/// The string is the caller's (g_free).
static inline gchar *keepsake_remote_error_name(const GError *error) {
    return g_dbus_error_get_remote_error(error);
}

// MARK: Change hints (KeyringStore+Changes.swift, Internal/KeyringSignals.swift)

/// The signal a Keepsake writer emits on the session bus after it changed a record, because
/// gnome-keyring emits nothing when an item's secret is replaced in place (Item.SetSecret).
#define KEEPSAKE_HINT_PATH "/org/keepsake/Keyring"
#define KEEPSAKE_HINT_INTERFACE "org.keepsake.Keyring"
#define KEEPSAKE_HINT_SIGNAL "RecordChanged"

/// Emits `org.keepsake.Keyring.RecordChanged(service, key)` to every connection that listens,
/// and waits (until `cancellable` is cancelled) until it has been written to the bus, so that a
/// process that exits right after a write has still told the watchers.
static inline gboolean keepsake_announce_change(GDBusConnection *bus, const gchar *service, const gchar *key,
                                                GCancellable *cancellable, GError **error) {
    if (!g_dbus_connection_emit_signal(bus, NULL, KEEPSAKE_HINT_PATH, KEEPSAKE_HINT_INTERFACE, KEEPSAKE_HINT_SIGNAL,
                                       g_variant_new("(ss)", service, key), error)) {
        return FALSE;
    }
    return g_dbus_connection_flush_sync(bus, cancellable, error);
}

/// What a watch forwards to its callback. The hints of StoreChange (the key as `text` for
/// KEEPSAKE_HINT_KEY), and the events the policy in Swift acts on
/// (Sources/KeepsakeKeyring/Internal/KeyringWatchPolicy.swift): a provider took the Secret
/// Service's name (`text`: its unique name), RecordChanged hints came as a flood, the bus
/// answered a re-subscription, a timer of the policy's fired (`detail`: which).
enum {
    KEEPSAKE_HINT_ANY = 0,
    KEEPSAKE_HINT_KEY = 1,
    KEEPSAKE_HINT_LOCKED = 2,
    KEEPSAKE_HINT_UNLOCKED = 3,
    KEEPSAKE_WATCH_ARRIVED = 4,
    KEEPSAKE_WATCH_FLOODED = 5,
    KEEPSAKE_WATCH_RESUBSCRIBED = 6,
    KEEPSAKE_WATCH_TICK = 7,
};

typedef struct KeepsakeWatch KeepsakeWatch;

/// Called on the watch's thread, never after keepsake_watch_stop.
typedef void (*KeepsakeWatchFunc)(KeepsakeWatch *watch, int event, int detail, const gchar *text, void *data);

/// Signal subscriptions of a watch; Keepsake writers' RecordChanged is a filter of its own
/// (keepsake_watch_filter), counted as one more user of the watch.
#define KEEPSAKE_WATCH_SUBSCRIPTIONS 4
/// Keys a watch holds for its next report before it reports "any record" instead.
#define KEEPSAKE_WATCH_PENDING_KEYS 64
/// A flood: this many RecordChanged hints for the watch's service within a second. Keepsake
/// writers send one per write (a keyring write takes a millisecond or more); any process on the
/// bus can send hundreds of thousands a second. Counted here, on GDBus's worker thread, where
/// they arrive; what to do about one is the policy's (KEEPSAKE_WATCH_FLOODED).
#define KEEPSAKE_WATCH_FLOOD_HINTS 2000
/// Timers the policy can run at once.
#define KEEPSAKE_WATCH_TIMERS 2

typedef struct {
    KeepsakeWatch *watch;
    int slot;
    GSource *source;
} KeepsakeWatchTimer;

/// Signal subscriptions on the session bus whose callbacks run on a GMainContext of their own,
/// iterated by keepsake_watch_run on a thread of the caller's.
struct KeepsakeWatch {
    GDBusConnection *bus;
    GMainContext *context;
    gchar *service;
    KeepsakeWatchFunc report;
    void *data;
    guint subscriptions[KEEPSAKE_WATCH_SUBSCRIPTIONS];
    gint live;  // subscriptions, the filter and AddMatch calls whose user data GDBus may still use
    // RecordChanged hints, gathered by the filter on GDBus's worker thread and reported by one
    // idle source on the watch's thread, however many signals came meanwhile (a flood from
    // another process costs a parse and a string compare each, not a report each).
    guint filter;
    gchar *match_rule;  // the AddMatch rule for RecordChanged of this service, NULL if not added
    GMutex pending_lock;
    GHashTable *pending_keys;  // of gchar*, owned
    gboolean pending_any;      // more than KEEPSAKE_WATCH_PENDING_KEYS keys: report "any record"
    gboolean pending_scheduled;
    gint64 window_start;  // the filter's count of hints in the current second
    guint window_count;
    gboolean flooded;  // a flood was forwarded; counting starts again at keepsake_watch_resubscribe
    gint stopping;     // set by keepsake_watch_stop
    KeepsakeWatchTimer timers[KEEPSAKE_WATCH_TIMERS];  // watch's thread only
};

static inline void keepsake_watch_released(gpointer data) {
    __atomic_fetch_sub(&((KeepsakeWatch *)data)->live, 1, __ATOMIC_SEQ_CST);
}

/// Forwards an event to the callback, unless the watch is stopping. On the watch's thread.
static inline void keepsake_watch_forward(KeepsakeWatch *watch, int event, int detail, const gchar *text) {
    if (__atomic_load_n(&watch->stopping, __ATOMIC_SEQ_CST)) return;
    watch->report(watch, event, detail, text, watch->data);
}

/// Stops timer `slot` if it runs. On the watch's thread (the callback's).
static inline void keepsake_watch_timer_stop(KeepsakeWatch *watch, int slot) {
    if (slot < 0 || slot >= KEEPSAKE_WATCH_TIMERS || watch->timers[slot].source == NULL) return;
    g_source_destroy(watch->timers[slot].source);
    g_source_unref(watch->timers[slot].source);
    watch->timers[slot].source = NULL;
}

static inline gboolean keepsake_watch_timer_fired(gpointer data) {
    KeepsakeWatchTimer *timer = data;
    keepsake_watch_forward(timer->watch, KEEPSAKE_WATCH_TICK, timer->slot, NULL);
    // The callback may have stopped (or replaced) this timer: then GLib is done with it.
    return g_main_current_source() == timer->source ? G_SOURCE_CONTINUE : G_SOURCE_REMOVE;
}

/// Starts timer `slot` (replacing it if it runs): KEEPSAKE_WATCH_TICK with `detail` = `slot`
/// every `msec`. On the watch's thread (the callback's).
static inline void keepsake_watch_timer_start(KeepsakeWatch *watch, int slot, guint msec) {
    if (slot < 0 || slot >= KEEPSAKE_WATCH_TIMERS) return;
    keepsake_watch_timer_stop(watch, slot);
    KeepsakeWatchTimer *timer = &watch->timers[slot];
    timer->watch = watch;
    timer->slot = slot;
    timer->source = g_timeout_source_new(msec);
    g_source_set_callback(timer->source, keepsake_watch_timer_fired, timer, NULL);
    g_source_attach(timer->source, watch->context);
}

/// Whether the provider that owns `owner` (a unique bus name) has a default collection now:
/// ReadAlias("default"), the one call that is safe while KeePassXC starts; FALSE when it does
/// not answer within a second. Never starts a provider.
static inline gboolean keepsake_watch_read_alias(KeepsakeWatch *watch, const gchar *owner) {
    GVariant *reply = g_dbus_connection_call_sync(
        watch->bus, owner, KEEPSAKE_SECRETS_PATH, "org.freedesktop.Secret.Service", "ReadAlias",
        g_variant_new("(s)", "default"), G_VARIANT_TYPE("(o)"), G_DBUS_CALL_FLAGS_NO_AUTO_START, 1000, NULL, NULL);
    if (reply == NULL) return FALSE;
    const gchar *collection = NULL;
    g_variant_get(reply, "(&o)", &collection);
    gboolean ready = g_strcmp0(collection, "/") != 0;
    g_variant_unref(reply);
    return ready;
}

// org.freedesktop.Secret.Collection ItemCreated/ItemChanged/ItemDeleted, and
// org.freedesktop.Secret.Service CollectionCreated/Changed/Deleted: which record is not said.
static inline void keepsake_watch_any(GDBusConnection *bus, const gchar *sender, const gchar *path, const gchar *interface,
                                      const gchar *signal, GVariant *parameters, gpointer data) {
    keepsake_watch_forward(data, KEEPSAKE_HINT_ANY, 0, NULL);
}

// NameOwnerChanged(name, old, new) of org.freedesktop.secrets: a provider that appeared is
// forwarded with its unique name; one that went away is not (reading then would have D-Bus
// start another provider).
static inline void keepsake_watch_owner(GDBusConnection *bus, const gchar *sender, const gchar *path,
                                        const gchar *interface, const gchar *signal, GVariant *parameters,
                                        gpointer data) {
    const gchar *name = NULL, *old_owner = NULL, *new_owner = NULL;
    if (!g_variant_is_of_type(parameters, G_VARIANT_TYPE("(sss)"))) return;
    g_variant_get(parameters, "(&s&s&s)", &name, &old_owner, &new_owner);
    if (new_owner[0] == '\0') return;
    keepsake_watch_forward(data, KEEPSAKE_WATCH_ARRIVED, 0, new_owner);
}

// org.freedesktop.DBus.Properties.PropertiesChanged of a collection or an item: `Locked` says
// which way the lock went; anything else may be a change of an item's attributes or label.
static inline void keepsake_watch_properties(GDBusConnection *bus, const gchar *sender, const gchar *path,
                                             const gchar *interface, const gchar *signal, GVariant *parameters,
                                             gpointer data) {
    int hint = KEEPSAKE_HINT_ANY;
    if (g_variant_is_of_type(parameters, G_VARIANT_TYPE("(sa{sv}as)"))) {
        GVariant *changed = g_variant_get_child_value(parameters, 1);
        gboolean locked = FALSE;
        if (g_variant_lookup(changed, "Locked", "b", &locked)) hint = locked ? KEEPSAKE_HINT_LOCKED : KEEPSAKE_HINT_UNLOCKED;
        g_variant_unref(changed);
    }
    keepsake_watch_forward(data, hint, 0, NULL);
}

/// Forwards the RecordChanged hints gathered since the last report: each key once, or one
/// KEEPSAKE_HINT_ANY when there were too many. On the watch's thread (an idle source).
static inline gboolean keepsake_watch_flush(gpointer data) {
    KeepsakeWatch *watch = data;
    g_mutex_lock(&watch->pending_lock);
    GHashTable *keys = watch->pending_keys;
    gboolean any = watch->pending_any;
    watch->pending_keys = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    watch->pending_any = FALSE;
    watch->pending_scheduled = FALSE;
    g_mutex_unlock(&watch->pending_lock);
    if (any) {
        keepsake_watch_forward(watch, KEEPSAKE_HINT_ANY, 0, NULL);
    } else {
        GHashTableIter iter;
        gpointer key = NULL;
        g_hash_table_iter_init(&iter, keys);
        while (g_hash_table_iter_next(&iter, &key, NULL)) keepsake_watch_forward(watch, KEEPSAKE_HINT_KEY, 0, key);
    }
    g_hash_table_unref(keys);
    return G_SOURCE_REMOVE;
}

static inline gboolean keepsake_watch_flooded(gpointer data) {
    keepsake_watch_forward(data, KEEPSAKE_WATCH_FLOODED, 0, NULL);
    return G_SOURCE_REMOVE;
}

/// Runs `callback` once on the watch's thread.
static inline void keepsake_watch_idle(KeepsakeWatch *watch, GSourceFunc callback) {
    GSource *idle = g_idle_source_new();
    g_source_set_callback(idle, callback, watch, NULL);
    g_source_attach(idle, watch->context);
    g_source_unref(idle);
}

/// Asks the bus to stop sending this watch RecordChanged (RemoveMatch; not waited for). On the
/// watch's thread.
static inline void keepsake_watch_unsubscribe(KeepsakeWatch *watch) {
    if (watch->match_rule == NULL) return;
    g_dbus_connection_call(watch->bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                           "RemoveMatch", g_variant_new("(s)", watch->match_rule), NULL, G_DBUS_CALL_FLAGS_NONE, -1,
                           NULL, NULL, NULL);
}

static inline void keepsake_watch_resubscribed(GObject *bus, GAsyncResult *result, gpointer data) {
    KeepsakeWatch *watch = data;
    GVariant *reply = g_dbus_connection_call_finish((GDBusConnection *)bus, result, NULL);
    if (reply != NULL) g_variant_unref(reply);
    keepsake_watch_forward(watch, KEEPSAKE_WATCH_RESUBSCRIBED, 0, NULL);
    keepsake_watch_released(watch);
}

/// Asks the bus to send RecordChanged again (AddMatch) and counts hints for floods afresh;
/// KEEPSAKE_WATCH_RESUBSCRIBED follows once the bus answered. On the watch's thread.
static inline void keepsake_watch_resubscribe(KeepsakeWatch *watch) {
    if (watch->match_rule == NULL) return;
    g_mutex_lock(&watch->pending_lock);
    watch->flooded = FALSE;
    watch->window_start = g_get_monotonic_time();
    watch->window_count = 0;
    g_mutex_unlock(&watch->pending_lock);
    __atomic_fetch_add(&watch->live, 1, __ATOMIC_SEQ_CST);  // until the answer's callback
    g_dbus_connection_call(watch->bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                           "AddMatch", g_variant_new("(s)", watch->match_rule), NULL, G_DBUS_CALL_FLAGS_NONE, -1, NULL,
                           keepsake_watch_resubscribed, watch);
}

// org.keepsake.Keyring.RecordChanged(service, key) from any Keepsake writer, seen on GDBus's
// worker thread as it arrives: only this watch's service counts. Any process on the bus may
// send it, as fast as it likes; a hint is added to the pending set and at most one report is
// scheduled at a time, so the cost of a flood is its parsing. The message is passed on.
static inline GDBusMessage *keepsake_watch_filter(GDBusConnection *bus, GDBusMessage *message, gboolean incoming,
                                                  gpointer data) {
    KeepsakeWatch *watch = data;
    if (!incoming || g_dbus_message_get_message_type(message) != G_DBUS_MESSAGE_TYPE_SIGNAL) return message;
    if (g_strcmp0(g_dbus_message_get_member(message), KEEPSAKE_HINT_SIGNAL) != 0 ||
        g_strcmp0(g_dbus_message_get_interface(message), KEEPSAKE_HINT_INTERFACE) != 0 ||
        g_strcmp0(g_dbus_message_get_path(message), KEEPSAKE_HINT_PATH) != 0) {
        return message;
    }
    GVariant *body = g_dbus_message_get_body(message);
    if (body == NULL || !g_variant_is_of_type(body, G_VARIANT_TYPE("(ss)"))) return message;
    const gchar *service = NULL, *key = NULL;
    g_variant_get(body, "(&s&s)", &service, &key);
    if (g_strcmp0(service, watch->service) != 0) return message;
    g_mutex_lock(&watch->pending_lock);
    if (!watch->pending_any && !g_hash_table_contains(watch->pending_keys, key)) {
        if (g_hash_table_size(watch->pending_keys) >= KEEPSAKE_WATCH_PENDING_KEYS) {
            watch->pending_any = TRUE;
            g_hash_table_remove_all(watch->pending_keys);
        } else {
            g_hash_table_add(watch->pending_keys, g_strdup(key));
        }
    }
    gboolean schedule = !watch->pending_scheduled;
    watch->pending_scheduled = TRUE;
    gint64 now = g_get_monotonic_time();
    if (now - watch->window_start >= G_USEC_PER_SEC) {
        watch->window_start = now;
        watch->window_count = 0;
    }
    gboolean flood = ++watch->window_count >= KEEPSAKE_WATCH_FLOOD_HINTS && !watch->flooded;
    if (flood) watch->flooded = TRUE;
    g_mutex_unlock(&watch->pending_lock);
    if (schedule) keepsake_watch_idle(watch, keepsake_watch_flush);
    if (flood) keepsake_watch_idle(watch, keepsake_watch_flooded);
    return message;
}

/// `value` quoted for a D-Bus match rule: inside apostrophes, an apostrophe is written as
/// '\'' (the rule's only escape). The string is the caller's (g_free).
static inline gchar *keepsake_match_quote(const gchar *value) {
    gsize length = 0, apostrophes = 0;
    for (const gchar *c = value; *c != '\0'; c++, length++) apostrophes += *c == '\'';
    gchar *quoted = (gchar *)g_malloc0_n(length + 3 * apostrophes + 3, 1);
    gchar *end = quoted;
    *end++ = '\'';
    for (const gchar *c = value; *c != '\0'; c++) {
        if (*c == '\'') {
            *end++ = '\'';
            *end++ = '\\';
            *end++ = '\'';
        }
        *end++ = *c;
    }
    *end = '\'';
    return quoted;
}

/// Calls org.freedesktop.DBus.AddMatch or RemoveMatch with `rule`.
static inline gboolean keepsake_watch_match(GDBusConnection *bus, const gchar *method, const gchar *rule,
                                            GCancellable *cancellable, GError **error) {
    GVariant *reply = g_dbus_connection_call_sync(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                                  "org.freedesktop.DBus", method, g_variant_new("(s)", rule), NULL,
                                                  G_DBUS_CALL_FLAGS_NONE, -1, cancellable, error);
    if (reply == NULL) return FALSE;
    g_variant_unref(reply);
    return TRUE;
}

/// Stops the timers, unsubscribes and dispatches the watch's context until GDBus has released
/// every subscription: no callback runs after this returns. On the thread that iterates the
/// context.
static inline void keepsake_watch_release(KeepsakeWatch *watch) {
    __atomic_store_n(&watch->stopping, 1, __ATOMIC_SEQ_CST);  // a report still pending is dropped
    for (int slot = 0; slot < KEEPSAKE_WATCH_TIMERS; slot++) keepsake_watch_timer_stop(watch, slot);
    g_main_context_push_thread_default(watch->context);
    for (int i = 0; i < KEEPSAKE_WATCH_SUBSCRIPTIONS; i++) {
        g_dbus_connection_signal_unsubscribe(watch->bus, watch->subscriptions[i]);
    }
    g_dbus_connection_remove_filter(watch->bus, watch->filter);
    // Best effort: a bus that is gone has dropped the rule with the connection. A rule removed
    // already (a flood's cooldown) is refused, which is harmless.
    if (watch->match_rule != NULL) (void)keepsake_watch_match(watch->bus, "RemoveMatch", watch->match_rule, NULL, NULL);
    while (__atomic_load_n(&watch->live, __ATOMIC_SEQ_CST) > 0) g_main_context_iteration(watch->context, TRUE);
    g_main_context_pop_thread_default(watch->context);
}

/// Frees a watch that was released (keepsake_watch_run returned).
static inline void keepsake_watch_free(KeepsakeWatch *watch) {
    g_main_context_unref(watch->context);
    g_object_unref(watch->bus);
    g_free(watch->service);
    g_free(watch->match_rule);
    g_hash_table_unref(watch->pending_keys);
    g_mutex_clear(&watch->pending_lock);
    g_free(watch);
}

/// Subscribes, on `bus`, to the Secret Service's item, collection, property and owner
/// signals and to Keepsake writers' RecordChanged, with callbacks on a new context that only
/// keepsake_watch_run iterates; then makes one round trip to the bus, so that every match rule
/// is in force when this returns (a change after it is not missed). NULL with `error` set when
/// that round trip fails; nothing is left subscribed then.
static inline KeepsakeWatch *keepsake_watch_new(GDBusConnection *bus, const gchar *service, KeepsakeWatchFunc report,
                                                void *data, GCancellable *cancellable, GError **error) {
    KeepsakeWatch *watch = (KeepsakeWatch *)g_malloc0_n(1, sizeof(KeepsakeWatch));
    watch->bus = g_object_ref(bus);
    watch->context = g_main_context_new();
    watch->service = g_strdup(service);
    watch->report = report;
    watch->data = data;
    watch->live = KEEPSAKE_WATCH_SUBSCRIPTIONS + 1;
    g_mutex_init(&watch->pending_lock);
    watch->pending_keys = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_main_context_push_thread_default(watch->context);
    guint *sub = watch->subscriptions;
    sub[0] = g_dbus_connection_signal_subscribe(bus, KEEPSAKE_SECRETS_NAME, "org.freedesktop.Secret.Collection", NULL,
                                                NULL, NULL, G_DBUS_SIGNAL_FLAGS_NONE, keepsake_watch_any, watch,
                                                keepsake_watch_released);
    sub[1] = g_dbus_connection_signal_subscribe(bus, KEEPSAKE_SECRETS_NAME, "org.freedesktop.Secret.Service", NULL,
                                                NULL, NULL, G_DBUS_SIGNAL_FLAGS_NONE, keepsake_watch_any, watch,
                                                keepsake_watch_released);
    sub[2] = g_dbus_connection_signal_subscribe(bus, KEEPSAKE_SECRETS_NAME, "org.freedesktop.DBus.Properties",
                                                "PropertiesChanged", NULL, NULL, G_DBUS_SIGNAL_FLAGS_NONE,
                                                keepsake_watch_properties, watch, keepsake_watch_released);
    // A provider that starts or is replaced (a restart unlocks gnome-keyring's login).
    sub[3] = g_dbus_connection_signal_subscribe(bus, "org.freedesktop.DBus", "org.freedesktop.DBus",
                                                "NameOwnerChanged", "/org/freedesktop/DBus", KEEPSAKE_SECRETS_NAME,
                                                G_DBUS_SIGNAL_FLAGS_NONE, keepsake_watch_owner, watch,
                                                keepsake_watch_released);
    // Keepsake writers' hints: a filter, released on this context (GDBus calls the free
    // function once the filter can no longer run), and a match rule for this service only.
    watch->filter = g_dbus_connection_add_filter(bus, keepsake_watch_filter, watch, keepsake_watch_released);
    g_main_context_pop_thread_default(watch->context);
    gchar *service_quoted = keepsake_match_quote(service);
    gchar *rule = g_strdup_printf("type='signal',interface='%s',member='%s',path='%s',arg0=%s", KEEPSAKE_HINT_INTERFACE,
                                  KEEPSAKE_HINT_SIGNAL, KEEPSAKE_HINT_PATH, service_quoted);
    g_free(service_quoted);
    // The bus handles one connection's messages in order: once it answers this AddMatch, it
    // has the subscriptions' ones too.
    if (!keepsake_watch_match(bus, "AddMatch", rule, cancellable, error)) {
        g_free(rule);
        keepsake_watch_release(watch);
        keepsake_watch_free(watch);
        return NULL;
    }
    watch->match_rule = rule;
    return watch;
}

/// Dispatches the watch's signals on the calling thread until keepsake_watch_stop; then
/// unsubscribes and keeps dispatching until GDBus has released every subscription (no callback
/// can run after this returns). Once only.
static inline void keepsake_watch_run(KeepsakeWatch *watch) {
    g_main_context_push_thread_default(watch->context);
    while (!__atomic_load_n(&watch->stopping, __ATOMIC_SEQ_CST)) g_main_context_iteration(watch->context, TRUE);
    g_main_context_pop_thread_default(watch->context);
    keepsake_watch_release(watch);
}

/// Makes keepsake_watch_run return (from any thread).
static inline void keepsake_watch_stop(KeepsakeWatch *watch) {
    __atomic_store_n(&watch->stopping, 1, __ATOMIC_SEQ_CST);
    g_main_context_wakeup(watch->context);
}
