/*
 * agent_proto_parse: the field readers agent_proto.c's message parsers use,
 * shared with the files that hold a family of messages of their own
 * (agent_proto_ctr.c). Internal to api/proto: nothing outside it includes
 * this.
 *
 * Contract: each reader checks one field of p->obj and returns AGENT_OK, or
 * the protocol's code with p->err filled in the document's words
 * ("<message>: '<field>' must be ..."). Absent optional fields take their
 * default.
 */
#ifndef KILN_AGENT_PROTO_PARSE_H
#define KILN_AGENT_PROTO_PARSE_H

#include "api/proto/agent_proto.h"
#include "lib/base/json.h"

/* One object being parsed: the object, its name in messages, the error. */
struct parse {
	json_t *obj;
	const char *name;
	enum agent_ctx ctx;
	struct agent_err *err;
};

enum agent_code agent_field_missing(struct parse *p, const char *key, const char *what);
/* A field json_field refused; `what` names what it holds ("an absolute path"). */
enum agent_code agent_field_refused(struct parse *p, const struct json_field_fail *f,
				    const char *what);
enum agent_code agent_field_bool(struct parse *p, const char *key, bool def, bool *out);
/* An integer in [min, max]; `def` when absent and not required. */
enum agent_code agent_field_uint(struct parse *p, const char *key, bool required, uint64_t min,
				 uint64_t max, uint64_t def, uint64_t *out);
enum agent_code agent_field_u32(struct parse *p, const char *key, bool required, uint32_t min,
				uint32_t max, uint32_t def, uint32_t *out);
enum agent_code agent_field_string(struct parse *p, const char *key, bool required,
				   const char *what, const char **out);
/* `s` (len bytes) as a path field: absolute, at most AGENT_PATH_MAX. */
enum agent_code agent_field_check_path(struct parse *p, const char *key, const char *s, size_t len);
enum agent_code agent_field_path(struct parse *p, const char *key, bool required, const char **out);
/* `signal`: required, 1..64 or a name. */
enum agent_code agent_field_signal(struct parse *p, int *signo);

/* A wire name's table (indexed by its enum): the name of i (NULL out of
 * range or unnamed), and the index of a name (-1 when none). */
const char *agent_name_at(const char *const *names, int n, int i);
int agent_name_index(const char *const *names, int n, const char *name);

/* agent_proto_ctr.c's readers, shared with agent_proto_sec.c. A nested
 * object as its own parse, named "<message> <key>" in name[namesz]: */
enum agent_code agent_sub_object(struct parse *p, json_t *v, const char *key,
				 const char *const *fields, char *name, size_t namesz,
				 struct parse *out);
/* An array field of at most max entries; NULL *out when absent. */
enum agent_code agent_field_array(struct parse *p, const char *key, bool required, size_t max,
				  const char *what, json_t **out);
/* An array of strings as a NULL-terminated vector pointing into the JSON
 * (freed by the caller). */
enum agent_code agent_string_vector(struct parse *p, const char *key, json_t *a, const char ***out,
				    size_t *n);
enum agent_code agent_no_memory(struct parse *p);
/* True when a '/'-separated path has a ".." component. */
bool agent_has_dotdot(const char *s);

/* The encoders' helpers: k set to v (taken over) in o, false when
 * anything failed (v NULL included); n strings as a JSON array (NULL: out
 * of memory). */
bool agent_put(json_t *o, const char *k, json_t *v);
json_t *agent_strings(const char *const *v, size_t n);

/* agent_proto_sec.c: a process's privileges (`process`'s rlimits,
 * capabilities, no_new_privileges, oom_score_adj) and ctr_create's
 * sysctl, masked_paths and readonly_paths. */
enum agent_code agent_ctr_privs_parse(struct parse *process, struct agent_ctr_privs *out);
enum agent_code agent_ctr_confine_parse(struct parse *create, struct agent_ctr_create *c);
void agent_ctr_confine_free(struct agent_ctr_create *c);

/* agent_proto_seccomp.c: ctr_create's `seccomp` (c->seccomp, NULL when
 * absent), its encoding, and what agent_ctr_confine_free releases of it. */
enum agent_code agent_ctr_seccomp_parse(struct parse *create, struct agent_ctr_create *c);
json_t *agent_ctr_seccomp_encode(const struct agent_seccomp *s);
void agent_ctr_seccomp_free(struct agent_ctr_create *c);

/* agent_proto_ctr.c: the container messages' bodies (7.9), and what
 * agent_msg_free releases of a ctr_create. */
enum agent_code agent_ctr_create_body(struct parse *p, struct agent_msg *m);
enum agent_code agent_ctr_body(struct parse *p, struct agent_msg *m);
enum agent_code agent_ctr_exec_body(struct parse *p, struct agent_msg *m);
void agent_ctr_create_free(struct agent_ctr_create *c);
void agent_ctr_process_free(struct agent_ctr_process *r);

#endif
