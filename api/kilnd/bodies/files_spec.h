/*
 * files_spec: the bodies of kilnd's file metadata endpoints
 * (docs/api.md: POST .../files/mkdir, .../files/remove, .../files/rename),
 * validated into agent client arguments, and the JSON that describes a
 * guest file (stat, list entries).
 *
 * Contract: pure (jansson only). Unknown fields are refused; the first
 * failing check wins, in the order of the tables in docs/api.md. Paths
 * are checked as the agent would (absolute, at most AGENT_PATH_MAX
 * bytes), so a request that passes is not refused for its shape. Strings
 * in the parsed structs borrow from the body: keep it alive.
 */
#ifndef KILN_FILES_SPEC_H
#define KILN_FILES_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include <kiln/agent.h>

#include "api/proto/agent_proto.h"
#include "api/kilnd/core/api_error.h"

struct mkdir_spec {
	const char *path;
	bool parents;
	int mode; /* -1: the agent's default 0755 */
	enum agent_user user;
};

struct remove_spec {
	const char *path;
	bool recursive;
	enum agent_user user;
};

struct rename_spec {
	const char *from, *to;
	bool overwrite;
	enum agent_user user;
};

/* {"path","parents","mode","user"}; mode 0..07777. 0 or -1 with e. */
int mkdir_spec_parse(const json_t *body, struct mkdir_spec *s, struct api_err *e);
/* {"path","recursive","user"}. */
int remove_spec_parse(const json_t *body, struct remove_spec *s, struct api_err *e);
/* {"from","to","overwrite","user"}. */
int rename_spec_parse(const json_t *body, struct rename_spec *s, struct api_err *e);

/*
 * A stat reply or list entry as the API shows it: path, kind, size, mode
 * (number) and mode_octal ("0644"), uid, gid, nlink, mtime (RFC 3339),
 * mtime_ns, target (symlinks), depth (list entries only, with_depth),
 * lossy (only when true). New reference; NULL when out of memory.
 */
json_t *file_stat_json(const struct kiln_file_info *st, bool with_depth);

#endif
