/*
 * secret_store: kilnd's named secrets (docs/api.md "Secrets"), the values the
 * HTTP(S) egress proxy injects into requests that a sandbox's firewall
 * `http` rules allow (`"inject": [{"header": "authorization", "secret":
 * "github", "format": "Bearer {}"}]`, lib/netrules/http_rules.h). A value
 * never enters a guest and is never answered, logged or counted by name.
 *
 *   <state-dir>/secrets.json (root, 0600), written whole (file_replace):
 *   {"version": 1, "secrets": [{"owner": 1000, "name": "github",
 *     "value": "ghp_...", "created_ms": 1764520000000,
 *     "updated_ms": 1764520000000}, ...]}
 *
 * Contract:
 *  - Pure logic over a struct secret_store (no lock, no global): the
 *    checks of a name and a value, the store's set, delete, find and
 *    lists, the stored file's parser (fuzzed: fuzz_secret_file) and
 *    writer, and a proxy's secrets file for a sandbox's http rules. kilnd
 *    holds one store under its own mutex (secrets.c).
 *  - A secret is (owner, name): each client uid has names of its own, as
 *    it has sandboxes of its own (sandbox_record_visible): a sandbox's
 *    rules name its owner's secrets. A name is what http rules accept
 *    (http_secret_name_ok: 1..64 of a-z, 0-9, '_', '-'). A value is
 *    1..SECRET_VALUE_MAX bytes of valid UTF-8 (a JSON string's) without
 *    NUL, CR or LF: it goes into an HTTP header field, where those would
 *    end or split it.
 *  - No message of this module quotes a value, or any byte of the stored
 *    file's value fields: a fault names the entry and the field.
 *  - Values are wiped (explicit_bzero) when replaced, deleted or freed.
 */
#ifndef KILN_SECRET_STORE_H
#define KILN_SECRET_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "api/kilnd/core/api_error.h"
#include "lib/base/err.h"
#include "lib/netrules/http_rules.h"

#define SECRET_NAME_MAX HTTP_SECRET_MAX
#define SECRET_VALUE_MAX (16 * 1024)
/* Secrets kept at once (every owner together): the stored file stays
 * below SECRETS_FILE_MAX. */
#define SECRETS_MAX 1024
#define SECRETS_FILE_MAX (24 * 1024 * 1024)
#define SECRETS_FILE "secrets.json"
#define SECRETS_FILE_VERSION 1

struct secret {
	uid_t owner;
	char name[SECRET_NAME_MAX + 1];
	char *value; /* NUL-terminated, len bytes */
	size_t len;
	int64_t created_ms, updated_ms; /* wall clock */
};

struct secret_store {
	struct secret *v; /* in creation order */
	size_t n, cap;
};

/* 0, or -1 with e (400 bad_field): what is wrong and what to do. */
int secret_name_check(const char *name, struct api_err *e);
/* value[0..len): 0, or -1 with e (400 bad_field, or 413 too_large). */
int secret_value_check(const char *value, size_t len, struct api_err *e);

/* Create or replace owner's name with value[0..len) (checked here too):
 * 0 with *created, or -1 with e (limit_reached, internal). */
int secret_store_set(struct secret_store *s, uid_t owner, const char *name, const char *value,
		     size_t len, int64_t now_ms, bool *created, struct api_err *e);
/* Put x back as it was (its owner, name, value and both times): a
 * change undone, an entry of the stored file. 0, or -1 with e. */
int secret_store_restore(struct secret_store *s, const struct secret *x, struct api_err *e);
/* Delete owner's name: 0, or -1 with e (404 not_found). */
int secret_store_delete(struct secret_store *s, uid_t owner, const char *name, struct api_err *e);
/* owner's name, or NULL. */
const struct secret *secret_store_find(const struct secret_store *s, uid_t owner, const char *name);
/* How many secrets owner holds; (uid_t)-1: every owner's. */
size_t secret_store_count(const struct secret_store *s, uid_t owner);
void secret_store_free(struct secret_store *s);

/* The API's views, never a value: {"name","owner","created","updated"};
 * the list {"secrets": [...]} of owner's, or every owner's for
 * (uid_t)-1. NULL out of memory. */
json_t *secret_view(const struct secret *x);
json_t *secret_store_list(const struct secret_store *s, uid_t owner);

/*
 * The stored file: parse text[0..len) into an empty *s (0, or -1 with e
 * naming the fault and its entry, and *s left empty), and render *s
 * (malloc'd, NUL-terminated, *len; the caller wipes and frees it; NULL
 * out of memory).
 */
int secret_file_parse(const char *text, size_t len, struct secret_store *s, struct err *e);
char *secret_file_render(const struct secret_store *s, size_t *len);

/* The names r's inject lists name (each once); NULL rules: none. */
bool secret_rules_name(const struct http_rules *r, const char *name);

/*
 * A proxy's secrets file (kiln-egress --secrets, docs/api.md "Secrets"):
 * {name: value} of owner's secrets that r's inject lists name (a name
 * r names that owner does not hold is left out: the proxy refuses the
 * request that needs it), written as dirfd/file with file_replace's
 * steps at mode 0600 and chowned to uid:gid ((uid_t)-1: left as is)
 * before it is renamed into place. *missing (may be NULL) counts the
 * names left out. 0, or -errno with e.
 */
int secret_file_for_rules(const struct secret_store *s, uid_t owner, const struct http_rules *r,
			  int dirfd, const char *file, uid_t uid, gid_t gid, size_t *missing,
			  struct err *e);

#endif
