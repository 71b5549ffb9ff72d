/*
 * query: the URL query parameters of each endpoint (docs/api.md), checked
 * and converted.
 *
 * Contract: pure. The HTTP layer hands over every parameter in order as
 * decoded key/value pairs (lib/base/url_query.h) (value NULL for "?key" without '='). Unknown
 * parameters are refused (unknown_field), a parameter given twice is
 * bad_field unless it is documented as repeatable, values are checked
 * like JSON fields. Returned strings borrow from the pairs.
 */
#ifndef KILN_QUERY_H
#define KILN_QUERY_H

#include <stdbool.h>
#include <stddef.h>

#include <kiln/agent.h>

#include "api/proto/agent_proto.h"
#include "api/kilnd/core/api_error.h"
#include "api/kilnd/core/sandbox_state.h"
#include "lib/base/url_query.h"

/* Endpoints without parameters: any parameter is unknown_field. */
/* Only keys from known (NULL-terminated), each at most once but for
 * repeatable (NULL: none); the first unknown or repeated key is the error
 * (400 unknown_field / bad_field, named with what). 0 or -1 with e. */
int query_check_keys(const struct query_kv *kv, size_t n, const char *const *known,
		     const char *repeatable, const char *what, struct api_err *e);

int query_none(const struct query_kv *kv, size_t n, const char *what, struct api_err *e);

/* POST .../exec: stream=1|0|true|false. */
int query_exec(const struct query_kv *kv, size_t n, bool *stream, struct api_err *e);

#define QUERY_LABELS_MAX 16

/* GET /v1/sandboxes filters. */
struct list_filter {
	int state; /* enum sandbox_state, or -1 for any */
	const char *label_key[QUERY_LABELS_MAX];
	size_t label_key_len[QUERY_LABELS_MAX]; /* the key is label_key[i][0..len) */
	const char *label_value[QUERY_LABELS_MAX];
	size_t nlabels;
};
int query_list(const struct query_kv *kv, size_t n, struct list_filter *f, struct api_err *e);
/* True when a sandbox in state st with these labels (object of strings) passes f. */
bool list_filter_match(const struct list_filter *f, enum sandbox_state st, const json_t *labels);

/* The libkiln flag of a request's user: KILN_AGENT_AS_ROOT for root. */
static inline unsigned query_user_flags(enum agent_user u)
{
	return u == AGENT_USER_ROOT ? KILN_AGENT_AS_ROOT : 0;
}

/* GET .../files: path, offset, length, user (o->size set). */
int query_file_get(const struct query_kv *kv, size_t n, const char **path, struct kiln_read_opts *o,
		   struct api_err *e);

/* PUT .../files: path, mode (else o->mode -1), parents, append, exclusive,
 * create (KILN_AGENT_NO_CREATE when false), user (o->size set). */
int query_file_put(const struct query_kv *kv, size_t n, const char **path,
		   struct kiln_write_opts *o, struct api_err *e);

/* GET .../files/stat: path, follow (default true), user. */
int query_file_stat(const struct query_kv *kv, size_t n, const char **path, bool *follow,
		    enum agent_user *user, struct api_err *e);

/* What kiln_agent_list takes besides the path. */
struct file_list_opts {
	unsigned flags; /* KILN_AGENT_AS_ROOT */
	uint32_t depth, limit;
};

/* GET .../files/list: path, depth (1..AGENT_LIST_DEPTH_MAX, default 1),
 * limit (1..AGENT_LIST_LIMIT_MAX, default AGENT_LIST_LIMIT_DEFAULT), user. */
int query_file_list(const struct query_kv *kv, size_t n, const char **path,
		    struct file_list_opts *o, struct api_err *e);

/* GET .../files/watch: path, recursive (default false), max_watches
 * (1..AGENT_WATCH_WATCHES_MAX), queue (AGENT_WATCH_QUEUE_MIN..MAX), user. */
int query_file_watch(const struct query_kv *kv, size_t n, const char **path,
		     struct kiln_watch_opts *o, struct api_err *e);

/* GET/PUT .../archive: path, user. */
int query_archive(const struct query_kv *kv, size_t n, const char **path, enum agent_user *user,
		  struct api_err *e);

/* POST /v1/images: name (required, an image name), devices (default
 * false), ref (a tag of an OCI layout, image_ref_valid; NULL when absent). */
int query_image_import(const struct query_kv *kv, size_t n, const char **name, bool *devices,
		       const char **ref, struct api_err *e);

/* POST /v1/templates: ?name=NAME (required) [&file=PATH] [&cpus=N]
 * [&memory_mib=N] [&disk_mib=N] (0: not given). The strings point into kv. */
struct template_build_query {
	const char *name, *file;
	unsigned cpus, memory_mib, disk_mib;
};
int query_template_build(const struct query_kv *kv, size_t n, struct template_build_query *q,
			 struct api_err *e);

/* GET .../egress/log: [?lines=N], 1..max (absent: def). */
int query_egress_log(const struct query_kv *kv, size_t n, size_t def, size_t max, size_t *lines,
		     struct api_err *e);

#endif
