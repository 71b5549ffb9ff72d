/*
 * rt_config_read: the field readers of rt_config.c, shared with the files
 * that read a part of config.json of their own (rt_config_privs.c).
 * Internal to rt_config: nothing else includes this.
 *
 * Contract: each reader checks one member of an object for type and bound
 * and returns 0, or -EINVAL / -ENOMEM with e saying which field
 * ("config.json: process.rlimits[2].hard is ...": `where` is the path of
 * the object the member is in). JSON null reads as absent.
 */
#ifndef KILN_RT_CONFIG_READ_H
#define KILN_RT_CONFIG_READ_H

#include "api/runtime/rt_config.h"

#define WHERE_MAX 96

json_t *cfg_member(const json_t *o, const char *k);
/* "process.user" + "uid" -> "process.user.uid" into buf. */
const char *cfg_path_of(char buf[WHERE_MAX], const char *where, const char *key);
int cfg_not_a(const json_t *v, const char *what, const char *where, struct err *e);
int cfg_get_object(const json_t *o, const char *key, const char *where, json_t **out,
		   struct err *e);
int cfg_get_string(const json_t *o, const char *key, bool required, size_t max, const char *where,
		   const char **out, struct err *e);
int cfg_get_bool(const json_t *o, const char *key, const char *where, bool *out, struct err *e);
/* An integer in [min, max]; *has false when absent. */
int cfg_get_int(const json_t *o, const char *key, const char *where, int64_t min, int64_t max,
		bool *has, int64_t *out, struct err *e);
int cfg_get_array(const json_t *o, const char *key, size_t max, const char *where, json_t **out,
		  struct err *e);
/* An array of strings, each at most len bytes, into a new NULL-terminated
 * array *out (NULL when absent or empty). */
int cfg_get_strings(const json_t *o, const char *key, size_t len, const char *where,
		    const char ***out, size_t *n, struct err *e);
int cfg_absolute(const char *p, const char *where, struct err *e);
bool cfg_has_dotdot(const char *p);

/* rt_config_privs.c: process.rlimits, capabilities, noNewPrivileges,
 * oomScoreAdj into p->privs; linux.sysctl, maskedPaths, readonlyPaths
 * into c. */
int rt_config_read_privs(const json_t *proc, struct rt_process *p, struct err *e);
int rt_config_read_confine(const json_t *lx, struct rt_config *c, struct err *e);

/* rt_config_seccomp.c: linux.seccomp into c->seccomp (NULL: none). */
int rt_config_read_seccomp(const json_t *lx, struct rt_config *c, struct err *e);
void rt_config_free_seccomp(struct rt_config *c);

#endif
