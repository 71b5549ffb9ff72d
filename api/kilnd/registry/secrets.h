/*
 * secrets: kilnd's one store of named secrets (secret_store.h, docs/api.md
 * "Secrets"), held in memory under its own mutex and in
 * <state-dir>/secrets.json (root, 0600), and what the egress proxy's
 * supervision reads of it.
 *
 * Contract:
 *  - secrets_init reads the file at kilnd's start; a file kilnd cannot
 *    trust (unreadable, not a regular file, not kilnd's own, readable by
 *    others, not what secret_file_parse takes) refuses the start with
 *    one line naming the fault, and the file is kept as it is.
 *  - Every change is written to the file (file_replace) before it is
 *    answered; a write that fails leaves memory as it was.
 *  - Scope (docs/security.md "Sandbox owners and shares"): a secret
 *    belongs to the uid that set it (owner); a request acts on its
 *    client's own secrets, root's on another uid's when it names one
 *    (owner != the client's uid, refused for anyone but root by the
 *    endpoint), and root's list shows every owner's.
 *  - Its lock is taken alone, or inside the registry's (kilnd_lock),
 *    never around it: secrets_changed takes the registry's after
 *    letting its own go.
 *  - Values leave this module only into the proxy's files
 *    (secrets_sandbox_file): never into an answer, a log line or a
 *    metric.
 */
#ifndef KILN_SECRETS_H
#define KILN_SECRETS_H

#include "api/kilnd/core/kilnd.h"
#include "api/kilnd/registry/secret_store.h"

/* Load <state-dir>/secrets.json into d->secrets (none: an empty store). -1 with e. */
int secrets_init(struct kilnd *d, struct err *e);
void secrets_fini(struct kilnd *d);

/* PUT /v1/secrets/{name}: 0 with *created and *view (the metadata), or -1 with e. */
int secrets_put(struct kilnd *d, uid_t owner, const char *name, const char *value, size_t len,
		bool *created, json_t **view, struct api_err *e);
/* DELETE: 0, or -1 with e (404 not_found). */
int secrets_remove(struct kilnd *d, uid_t owner, const char *name, struct api_err *e);
/* GET one: 0 with *view, or -1 with e (404 not_found). */
int secrets_get(struct kilnd *d, uid_t owner, const char *name, json_t **view, struct api_err *e);
/* GET the list: owner's, or every owner's for (uid_t)-1; NULL out of memory. */
json_t *secrets_list(struct kilnd *d, uid_t owner);
/* How many secrets kilnd holds (every owner), for /metrics. */
size_t secrets_total(struct kilnd *d);

/*
 * For the egress proxy (issue 37): write the proxy's secrets file
 * (kiln-egress --secrets FILE) for a sandbox of owner's whose firewall
 * `http` rules are r: {name: value} of only the secrets r names, as
 * dirfd/file, 0600, owned by uid:gid (the proxy's). *missing (may be
 * NULL): how many names r names that owner holds no secret for. 0, or
 * -errno with e.
 */
int secrets_sandbox_file(struct kilnd *d, uid_t owner, const struct http_rules *r, int dirfd,
			 const char *file, uid_t uid, gid_t gid, size_t *missing, struct err *e);

/*
 * The sandboxes of owner's whose current firewall `http` rules name the
 * secret name: up to cap ids into ids; returns how many there are (may be
 * more than cap). A sandbox whose rules cannot be read is counted in, so
 * that a caller refreshing their proxies fails closed on it.
 */
size_t secrets_sandboxes_naming(struct kilnd *d, uid_t owner, const char *name,
				char (*ids)[SANDBOX_ID_LEN + 1], size_t cap);

/*
 * The hook called after owner's secret name was set or deleted (the
 * store and its file already changed): each sandbox whose rules name it
 * (secrets_sandboxes_naming) must get its proxy's secrets file rewritten
 * (secrets_sandbox_file) and its kiln-egress a SIGHUP
 * (egress_proxy_secrets_changed). Returns how many sandboxes name it.
 */
size_t secrets_changed(struct kilnd *d, uid_t owner, const char *name);

#endif
