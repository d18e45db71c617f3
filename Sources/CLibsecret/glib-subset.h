// The part of the GLib, GObject, GIO and libsecret C API that CLibsecret (shim.h) and
// KeepsakeKeyring use, declared here instead of included from <libsecret/secret.h>.
//
// Why: the real headers need the compiler flags of `pkg-config --cflags libsecret-1`, which on
// Debian and Ubuntu include `-pthread` (from gio's private gmodule-no-export-2.0). SwiftPM only
// passes -I and -F from a .pc file and warns "prohibited flag(s): -pthread, -pthread" about the
// rest, in every build of this package and of every package that depends on it; a package has
// no way to change that lookup (PKG_CONFIG_PATH and --pkg-config-path are the builder's). With
// these declarations CLibsecret needs no header search path at all, so Package.swift declares
// it without `pkgConfig:`, and the module map links the four libraries by name (the unversioned
// .so symlinks come with libsecret-1-dev and libglib2.0-dev, scripts/install-deps).
//
// Nothing here is invented: every declaration is copied from the installed headers (GLib 2.74,
// libsecret 0.20 when written), whose ABI is stable for GLib 2.x and libsecret 0.x, and
// scripts/check-clibsecret (run by scripts/lint) proves they still agree:
// - it compiles shim.h on its own, with no GLib include path, warnings as errors;
// - it compiles shim.h again after the real <libsecret/secret.h>, with KEEPSAKE_GLIB_CHECK
//   defined. Then every function below is a redeclaration of the real one, and a prototype
//   that differs in any parameter or result type is a compile error; every typedef is a
//   redefinition, an error unless it names the same type; every macro is a redefinition, an
//   error (-Werror) unless it has the same tokens; and the structs and enums, renamed by
//   KEEPSAKE_GLIB, are compared by the _Static_asserts next to them (size, alignment, field
//   offsets and types, enumerator values, signedness). shim.h's helpers are type-checked against
//   the real headers in that same pass.
//
// Rules for changing this file: copy the declaration from the real header (the parameter and
// result types exactly; a function's name in parentheses, so that a function-like macro of the
// same name in the real headers does not expand there), add the _Static_asserts for any new
// struct or enum, and run scripts/check-clibsecret. Structs and enums only with the members
// Keepsake uses; object types stay opaque (pointers only, never dereferenced).
#ifndef KEEPSAKE_GLIB_SUBSET_H
#define KEEPSAKE_GLIB_SUBSET_H

#include <stddef.h>

#ifdef KEEPSAKE_GLIB_CHECK
// Beside the real headers: our structs and enums get names of their own, to be compared.
#define KEEPSAKE_GLIB(name) keepsake_check_##name
#define KEEPSAKE_GLIB_SAME_LAYOUT(type)                                                                  \
    _Static_assert(sizeof(type) == sizeof(KEEPSAKE_GLIB(type)) && _Alignof(type) == _Alignof(KEEPSAKE_GLIB(type)), \
                   #type ": size or alignment differs from GLib's");
#define KEEPSAKE_GLIB_SAME_FIELD(type, field)                                                               \
    _Static_assert(offsetof(type, field) == offsetof(KEEPSAKE_GLIB(type), field) &&                         \
                       __builtin_types_compatible_p(__typeof__(((type *)0)->field),                         \
                                                    __typeof__(((KEEPSAKE_GLIB(type) *)0)->field)),         \
                   #type "." #field ": offset or type differs from GLib's");
#define KEEPSAKE_GLIB_SAME_ENUM(type)                                                                      \
    _Static_assert(sizeof(type) == sizeof(KEEPSAKE_GLIB(type)) && ((type)-1 < 0) == ((KEEPSAKE_GLIB(type))-1 < 0), \
                   #type ": size or signedness differs from GLib's");
#define KEEPSAKE_GLIB_ENUMERATOR(name, value) KEEPSAKE_GLIB(name) = value,
#define KEEPSAKE_GLIB_SAME_ENUMERATOR(name, value) \
    _Static_assert(name == value, #name ": value differs from GLib's");
#else
#define KEEPSAKE_GLIB(name) name
#define KEEPSAKE_GLIB_SAME_LAYOUT(type)
#define KEEPSAKE_GLIB_SAME_FIELD(type, field)
#define KEEPSAKE_GLIB_SAME_ENUM(type)
#define KEEPSAKE_GLIB_ENUMERATOR(name, value) name = value,
#define KEEPSAKE_GLIB_SAME_ENUMERATOR(name, value)
#endif

// MARK: Basic types (glib/gtypes.h, glibconfig.h, glib/gquark.h, gobject/gtype.h)

// glibconfig.h's fixed-size and size types are the compiler's own types for those sizes
// (`long` and `unsigned long` on 64-bit Linux), so that they are right on every architecture and
// Swift imports them as before (Int, UInt).
typedef char gchar;
typedef int gint;
typedef gint gboolean;
typedef unsigned int guint;
typedef unsigned long gulong;
typedef void *gpointer;
typedef const void *gconstpointer;
typedef __UINT32_TYPE__ guint32;
typedef __INT64_TYPE__ gint64;
typedef __UINT64_TYPE__ guint64;
typedef __SIZE_TYPE__ gsize;
typedef __PTRDIFF_TYPE__ gssize;
typedef guint32 GQuark;
typedef gsize GType;

#define FALSE (0)
#define TRUE (!FALSE)

// MARK: Opaque types (only ever pointed to)

typedef struct _GAsyncResult GAsyncResult;
typedef struct _GCancellable GCancellable;
typedef struct _GClosure GClosure;
typedef struct _GDBusConnection GDBusConnection;
typedef struct _GDBusMessage GDBusMessage;
typedef struct _GDBusProxy GDBusProxy;
typedef struct _GHashTable GHashTable;
typedef struct _GMainContext GMainContext;
typedef struct _GObject GObject;
typedef struct _GSource GSource;
typedef struct _GVariant GVariant;
typedef struct _GVariantType GVariantType;
typedef struct _SecretService SecretService;
typedef struct _SecretValue SecretValue;

// MARK: Callback types

typedef void (*GCallback)(void);
typedef void (*GClosureNotify)(gpointer data, GClosure *closure);
typedef void (*GDestroyNotify)(gpointer data);
typedef guint (*GHashFunc)(gconstpointer key);
typedef gboolean (*GEqualFunc)(gconstpointer a, gconstpointer b);
typedef gboolean (*GSourceFunc)(gpointer user_data);
typedef void (*GAsyncReadyCallback)(GObject *source_object, GAsyncResult *res, gpointer user_data);
typedef void (*GDBusSignalCallback)(GDBusConnection *connection, const gchar *sender_name, const gchar *object_path,
                                    const gchar *interface_name, const gchar *signal_name, GVariant *parameters,
                                    gpointer user_data);
typedef GDBusMessage *(*GDBusMessageFilterFunction)(GDBusConnection *connection, GDBusMessage *message,
                                                    gboolean incoming, gpointer user_data);

// MARK: Structs the caller allocates or reads (glib/gerror.h, glib/ghash.h, glib/gvariant.h)

typedef struct KEEPSAKE_GLIB(_GError) KEEPSAKE_GLIB(GError);
struct KEEPSAKE_GLIB(_GError) {
    GQuark domain;
    gint code;
    gchar *message;
};
KEEPSAKE_GLIB_SAME_LAYOUT(GError)
KEEPSAKE_GLIB_SAME_FIELD(GError, domain)
KEEPSAKE_GLIB_SAME_FIELD(GError, code)
KEEPSAKE_GLIB_SAME_FIELD(GError, message)

typedef struct KEEPSAKE_GLIB(_GHashTableIter) KEEPSAKE_GLIB(GHashTableIter);
struct KEEPSAKE_GLIB(_GHashTableIter) {
    gpointer dummy1;
    gpointer dummy2;
    gpointer dummy3;
    int dummy4;
    gboolean dummy5;
    gpointer dummy6;
};
KEEPSAKE_GLIB_SAME_LAYOUT(GHashTableIter)

typedef union KEEPSAKE_GLIB(_GMutex) KEEPSAKE_GLIB(GMutex);
union KEEPSAKE_GLIB(_GMutex) {
    gpointer p;
    guint i[2];
};
KEEPSAKE_GLIB_SAME_LAYOUT(GMutex)

typedef struct KEEPSAKE_GLIB(_GVariantIter) KEEPSAKE_GLIB(GVariantIter);
struct KEEPSAKE_GLIB(_GVariantIter) {
    gsize x[16];
};
KEEPSAKE_GLIB_SAME_LAYOUT(GVariantIter)

typedef struct KEEPSAKE_GLIB(_GVariantBuilder) KEEPSAKE_GLIB(GVariantBuilder);
struct KEEPSAKE_GLIB(_GVariantBuilder) {
    union {
        struct {
            gsize partial_magic;
            const GVariantType *type;
            gsize y[14];
        } s;
        gsize x[16];
    } u;
};
KEEPSAKE_GLIB_SAME_LAYOUT(GVariantBuilder)

// MARK: Enums (gio/gioenums.h, gobject/gsignal.h, libsecret/secret-types.h, secret-service.h)

#define KEEPSAKE_GLIB_ENUM(type, LIST)                                      \
    typedef enum { LIST(KEEPSAKE_GLIB_ENUMERATOR) } KEEPSAKE_GLIB(type);    \
    KEEPSAKE_GLIB_SAME_ENUM(type)                                           \
    LIST(KEEPSAKE_GLIB_SAME_ENUMERATOR)

// G_BUS_TYPE_STARTER keeps the type signed, as GLib's is.
#define KEEPSAKE_GBUSTYPE(X) X(G_BUS_TYPE_STARTER, -1) X(G_BUS_TYPE_SESSION, 2)
KEEPSAKE_GLIB_ENUM(GBusType, KEEPSAKE_GBUSTYPE)

#define KEEPSAKE_GDBUSCALLFLAGS(X) X(G_DBUS_CALL_FLAGS_NONE, 0) X(G_DBUS_CALL_FLAGS_NO_AUTO_START, 1)
KEEPSAKE_GLIB_ENUM(GDBusCallFlags, KEEPSAKE_GDBUSCALLFLAGS)

#define KEEPSAKE_GDBUSPROXYFLAGS(X) \
    X(G_DBUS_PROXY_FLAGS_DO_NOT_LOAD_PROPERTIES, 1) X(G_DBUS_PROXY_FLAGS_DO_NOT_CONNECT_SIGNALS, 2)
KEEPSAKE_GLIB_ENUM(GDBusProxyFlags, KEEPSAKE_GDBUSPROXYFLAGS)

#define KEEPSAKE_GDBUSMESSAGETYPE(X) X(G_DBUS_MESSAGE_TYPE_SIGNAL, 4)
KEEPSAKE_GLIB_ENUM(GDBusMessageType, KEEPSAKE_GDBUSMESSAGETYPE)

#define KEEPSAKE_GDBUSSIGNALFLAGS(X) X(G_DBUS_SIGNAL_FLAGS_NONE, 0)
KEEPSAKE_GLIB_ENUM(GDBusSignalFlags, KEEPSAKE_GDBUSSIGNALFLAGS)

#define KEEPSAKE_GCONNECTFLAGS(X) X(G_CONNECT_AFTER, 1)
KEEPSAKE_GLIB_ENUM(GConnectFlags, KEEPSAKE_GCONNECTFLAGS)

#define KEEPSAKE_GIOERRORENUM(X) X(G_IO_ERROR_CLOSED, 18) X(G_IO_ERROR_CANCELLED, 19) X(G_IO_ERROR_TIMED_OUT, 24)
KEEPSAKE_GLIB_ENUM(GIOErrorEnum, KEEPSAKE_GIOERRORENUM)

#define KEEPSAKE_GDBUSERROR(X)                                                                          \
    X(G_DBUS_ERROR_SERVICE_UNKNOWN, 2) X(G_DBUS_ERROR_NAME_HAS_NO_OWNER, 3) X(G_DBUS_ERROR_NO_REPLY, 4)   \
    X(G_DBUS_ERROR_TIMEOUT, 12) X(G_DBUS_ERROR_DISCONNECTED, 15) X(G_DBUS_ERROR_TIMED_OUT, 20)            \
    X(G_DBUS_ERROR_SPAWN_EXEC_FAILED, 23) X(G_DBUS_ERROR_SPAWN_CHILD_EXITED, 25)                         \
    X(G_DBUS_ERROR_SPAWN_FAILED, 27) X(G_DBUS_ERROR_SPAWN_SERVICE_NOT_FOUND, 31)
KEEPSAKE_GLIB_ENUM(GDBusError, KEEPSAKE_GDBUSERROR)

#define KEEPSAKE_SECRETERROR(X) X(SECRET_ERROR_IS_LOCKED, 2)
KEEPSAKE_GLIB_ENUM(SecretError, KEEPSAKE_SECRETERROR)

#define KEEPSAKE_SECRETSERVICEFLAGS(X) X(SECRET_SERVICE_OPEN_SESSION, 2)
KEEPSAKE_GLIB_ENUM(SecretServiceFlags, KEEPSAKE_SECRETSERVICEFLAGS)

// MARK: Macros (GLib's tokens and spacing: a different definition is an error in the check)

#define G_USEC_PER_SEC 1000000
#define G_SOURCE_REMOVE FALSE
#define G_SOURCE_CONTINUE TRUE
#define G_VARIANT_TYPE(type_string) (g_variant_type_checked_ ((type_string)))
#define G_VARIANT_TYPE_BOOLEAN ((const GVariantType *) "b")
#define G_VARIANT_TYPE_OBJECT_PATH ((const GVariantType *) "o")

// MARK: GLib (libglib-2.0)

void (g_free)(gpointer mem);
gpointer (g_malloc0_n)(gsize n_blocks, gsize n_block_bytes);
gchar *(g_strdup)(const gchar *str);
gchar *(g_strdup_printf)(const gchar *format, ...);
void (g_strfreev)(gchar **str_array);
int (g_strcmp0)(const char *str1, const char *str2);
guint (g_str_hash)(gconstpointer v);
gboolean (g_str_equal)(gconstpointer v1, gconstpointer v2);
void (g_usleep)(gulong microseconds);
gint64 (g_get_monotonic_time)(void);

const gchar *(g_quark_to_string)(GQuark quark);
void (g_error_free)(GError *error);
void (g_propagate_error)(GError **dest, GError *src);

GHashTable *(g_hash_table_new_full)(GHashFunc hash_func, GEqualFunc key_equal_func, GDestroyNotify key_destroy_func,
                                    GDestroyNotify value_destroy_func);
gboolean (g_hash_table_insert)(GHashTable *hash_table, gpointer key, gpointer value);
gboolean (g_hash_table_replace)(GHashTable *hash_table, gpointer key, gpointer value);
gpointer (g_hash_table_lookup)(GHashTable *hash_table, gconstpointer key);
void (g_hash_table_unref)(GHashTable *hash_table);
gboolean (g_hash_table_add)(GHashTable *hash_table, gpointer key);
gboolean (g_hash_table_contains)(GHashTable *hash_table, gconstpointer key);
guint (g_hash_table_size)(GHashTable *hash_table);
void (g_hash_table_remove_all)(GHashTable *hash_table);
void (g_hash_table_iter_init)(GHashTableIter *iter, GHashTable *hash_table);
gboolean (g_hash_table_iter_next)(GHashTableIter *iter, gpointer *key, gpointer *value);

void (g_mutex_init)(GMutex *mutex);
void (g_mutex_clear)(GMutex *mutex);
void (g_mutex_lock)(GMutex *mutex);
void (g_mutex_unlock)(GMutex *mutex);

GMainContext *(g_main_context_new)(void);
void (g_main_context_unref)(GMainContext *context);
gboolean (g_main_context_iteration)(GMainContext *context, gboolean may_block);
void (g_main_context_wakeup)(GMainContext *context);
void (g_main_context_push_thread_default)(GMainContext *context);
void (g_main_context_pop_thread_default)(GMainContext *context);
guint (g_source_attach)(GSource *source, GMainContext *context);
void (g_source_destroy)(GSource *source);
void (g_source_unref)(GSource *source);
void (g_source_set_callback)(GSource *source, GSourceFunc func, gpointer data, GDestroyNotify notify);
GSource *(g_timeout_source_new)(guint interval);
GSource *(g_idle_source_new)(void);
GSource *(g_main_current_source)(void);

const GVariantType *(g_variant_type_checked_)(const gchar *);
GVariant *(g_variant_new)(const gchar *format_string, ...);
GVariant *(g_variant_new_string)(const gchar *string);
GVariant *(g_variant_new_object_path)(const gchar *object_path);
GVariant *(g_variant_ref_sink)(GVariant *value);
void (g_variant_unref)(GVariant *value);
void (g_variant_get)(GVariant *value, const gchar *format_string, ...);
gboolean (g_variant_get_boolean)(GVariant *value);
GVariant *(g_variant_get_child_value)(GVariant *value, gsize index_);
gchar *(g_variant_dup_string)(GVariant *value, gsize *length);
gboolean (g_variant_is_of_type)(GVariant *value, const GVariantType *type);
gboolean (g_variant_lookup)(GVariant *dictionary, const gchar *key, const gchar *format_string, ...);
GVariant *(g_variant_lookup_value)(GVariant *dictionary, const gchar *key, const GVariantType *expected_type);
gsize (g_variant_iter_init)(GVariantIter *iter, GVariant *value);
gboolean (g_variant_iter_next)(GVariantIter *iter, const gchar *format_string, ...);
void (g_variant_builder_init)(GVariantBuilder *builder, const GVariantType *type);
void (g_variant_builder_add)(GVariantBuilder *builder, const gchar *format_string, ...);
GVariant *(g_variant_builder_end)(GVariantBuilder *builder);

// MARK: GObject (libgobject-2.0)

gpointer (g_object_ref)(gpointer object);
void (g_object_unref)(gpointer object);
gulong (g_signal_connect_data)(gpointer instance, const gchar *detailed_signal, GCallback c_handler, gpointer data,
                               GClosureNotify destroy_data, GConnectFlags connect_flags);
void (g_signal_stop_emission_by_name)(gpointer instance, const gchar *detailed_signal);

// MARK: GIO (libgio-2.0)

GQuark (g_io_error_quark)(void);
GQuark (g_dbus_error_quark)(void);
gchar *(g_dbus_error_get_remote_error)(const GError *error);

GCancellable *(g_cancellable_new)(void);
gboolean (g_cancellable_is_cancelled)(GCancellable *cancellable);
void (g_cancellable_cancel)(GCancellable *cancellable);
GSource *(g_cancellable_source_new)(GCancellable *cancellable);

gpointer (g_initable_new)(GType object_type, GCancellable *cancellable, GError **error, const gchar *first_property_name,
                          ...);

GDBusConnection *(g_bus_get_sync)(GBusType bus_type, GCancellable *cancellable, GError **error);
gboolean (g_dbus_connection_is_closed)(GDBusConnection *connection);
gboolean (g_dbus_connection_flush_sync)(GDBusConnection *connection, GCancellable *cancellable, GError **error);
gboolean (g_dbus_connection_emit_signal)(GDBusConnection *connection, const gchar *destination_bus_name,
                                         const gchar *object_path, const gchar *interface_name,
                                         const gchar *signal_name, GVariant *parameters, GError **error);
GVariant *(g_dbus_connection_call_sync)(GDBusConnection *connection, const gchar *bus_name, const gchar *object_path,
                                        const gchar *interface_name, const gchar *method_name, GVariant *parameters,
                                        const GVariantType *reply_type, GDBusCallFlags flags, gint timeout_msec,
                                        GCancellable *cancellable, GError **error);
void (g_dbus_connection_call)(GDBusConnection *connection, const gchar *bus_name, const gchar *object_path,
                              const gchar *interface_name, const gchar *method_name, GVariant *parameters,
                              const GVariantType *reply_type, GDBusCallFlags flags, gint timeout_msec,
                              GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data);
GVariant *(g_dbus_connection_call_finish)(GDBusConnection *connection, GAsyncResult *res, GError **error);
guint (g_dbus_connection_signal_subscribe)(GDBusConnection *connection, const gchar *sender,
                                           const gchar *interface_name, const gchar *member, const gchar *object_path,
                                           const gchar *arg0, GDBusSignalFlags flags, GDBusSignalCallback callback,
                                           gpointer user_data, GDestroyNotify user_data_free_func);
void (g_dbus_connection_signal_unsubscribe)(GDBusConnection *connection, guint subscription_id);
guint (g_dbus_connection_add_filter)(GDBusConnection *connection, GDBusMessageFilterFunction filter_function,
                                     gpointer user_data, GDestroyNotify user_data_free_func);
void (g_dbus_connection_remove_filter)(GDBusConnection *connection, guint filter_id);
GDBusMessageType (g_dbus_message_get_message_type)(GDBusMessage *message);
const gchar *(g_dbus_message_get_path)(GDBusMessage *message);
const gchar *(g_dbus_message_get_interface)(GDBusMessage *message);
const gchar *(g_dbus_message_get_member)(GDBusMessage *message);
GVariant *(g_dbus_message_get_body)(GDBusMessage *message);
GDBusConnection *(g_dbus_proxy_get_connection)(GDBusProxy *proxy);
gchar *(g_dbus_proxy_get_name_owner)(GDBusProxy *proxy);

// MARK: libsecret (libsecret-1)

GQuark (secret_error_get_quark)(void);
GType (secret_service_get_type)(void);
const gchar *(secret_service_get_session_dbus_path)(SecretService *self);
GVariant *(secret_service_encode_dbus_secret)(SecretService *service, SecretValue *value);
SecretValue *(secret_service_decode_dbus_secret)(SecretService *service, GVariant *value);
SecretValue *(secret_value_new)(const gchar *secret, gssize length, const gchar *content_type);
void (secret_value_unref)(gpointer value);
gchar *(secret_value_unref_to_password)(SecretValue *value, gsize *length);
void (secret_password_free)(gchar *password);

#endif
