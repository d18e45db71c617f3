#include <libsecret/secret.h>
