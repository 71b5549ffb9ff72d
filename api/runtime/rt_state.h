/*
 * rt_state: a container's record in kiln-runtime's state directory
 * (<root>/<id>/state.json, docs/oci-runtime.md "State directory"), and
 * what `state`, `list` and `features` print, in runc's field set (go-runc
 * and Podman decode them).
 *
 * Contract: pure (jansson only). The caller writes the encoded record
 * with tmp + rename and reads it back whole; the decoder takes it as
 * hostile (another root process could have planted it): strict JSON, at
 * most RT_STATE_FILE_MAX bytes, every key known, every string bounded,
 * a version number it knows. Which status a container is in is the
 * caller's to work out (the shim's liveness); here it is only named.
 */
#ifndef KILN_RT_STATE_H
#define KILN_RT_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "lib/base/err.h"

#define RT_ID_MAX 255                 /* a directory name under --root */
#define RT_PATH_MAX 4096              /* PATH_MAX */
#define RT_STATE_FILE_MAX (1u << 20)  /* state.json; the annotations are most of it */
#define RT_STATE_ANNOTATIONS_MAX 1024 /* as config.json's */
#define RT_STATE_VERSION 1            /* "kiln_state" in the record */
#define RT_OCI_VERSION "1.0.2"        /* the runtime-spec version `state` reports */
#define RT_OCI_VERSION_MIN "1.0.0"    /* features: the configs kiln-runtime reads */
#define RT_OCI_VERSION_MAX "1.1.0"

/* runc's statuses (runtime-spec "state"; runc adds paused). */
enum rt_status {
	RT_STATUS_CREATING,
	RT_STATUS_CREATED,
	RT_STATUS_RUNNING,
	RT_STATUS_PAUSED,
	RT_STATUS_STOPPED,
};

/* A process kiln-runtime started, known across pid reuse by its start
 * time (lib/base/proc_stat: clock ticks since boot); pid 0: none. */
struct rt_proc_id {
	int pid;
	uint64_t start;
};

/* state.json: what later commands need to find the container's parts. */
struct rt_state_rec {
	char id[RT_ID_MAX + 1];
	char cid[RT_ID_MAX + 1];     /* the container's ID in the guest: a restored one's at
				   * its checkpoint; "" the same as id */
	char sandbox[RT_ID_MAX + 1]; /* a pod's further container: its sandbox's ID (whose VM
				      * it runs in); "" a VM of its own */
	char bundle[RT_PATH_MAX];    /* absolute */
	char rootfs[RT_PATH_MAX];    /* absolute */
	char created[40];            /* RFC 3339 with nanoseconds, UTC (rt_log_time) */
	enum rt_status status;       /* as last recorded: creating, created, running, paused */
	struct rt_proc_id shim;      /* the pid file's process */
	struct rt_proc_id vmm;       /* kiln-vmm, the shim's child */
	uint32_t id_range;           /* first host id of the container's range, 0: none yet */
	char cgroup[RT_PATH_MAX];    /* the host cgroup directory made, "" none */
	char netns[RT_PATH_MAX];     /* the network namespace joined, "" none */
	char tap[16];                /* the TAP made in it (IFNAMSIZ), "" none */
	char net[128];               /* kiln-vmm's --net value (RT_NET_OPT_MAX), "" none */
	json_t *annotations;         /* an object of strings, owned; NULL: none */
};

/*
 * runc's container ID rule: 1..RT_ID_MAX bytes of [A-Za-z0-9_+.-], and
 * not "." or ".." (it names a directory under --root). 0, or -EINVAL
 * with e.
 */
int rt_id_check(const char *id, struct err *e);

/* annotations as the record and config.json hold them: an object of at
 * most RT_STATE_ANNOTATIONS_MAX strings; *out a new reference (v NULL:
 * *out untouched). -EINVAL with e naming `where`. */
int rt_annotations_read(json_t *v, const char *where, json_t **out, struct err *e);

/* "created", ...; "unknown" out of range. */
const char *rt_status_name(enum rt_status s);

/* The record as state.json's text (*out malloc'ed, NUL-terminated). */
int rt_state_encode(const struct rt_state_rec *r, char **out, struct err *e);

/* state.json's n bytes into *r (r->annotations a new reference or NULL;
 * rt_state_rec_free drops it). -EINVAL with e naming the field. */
int rt_state_decode(const char *buf, size_t n, struct rt_state_rec *r, struct err *e);

void rt_state_rec_free(struct rt_state_rec *r);

/* What `state` reports of a container: the record, the status the
 * caller found, and the pid it shows (0 once stopped, as runc). */
struct rt_state_view {
	const struct rt_state_rec *rec;
	enum rt_status status;
	int pid;
};

/* `state ID`: runc's object, indented by two as runc prints it, with a
 * newline. *out malloc'ed. */
int rt_state_render(const struct rt_state_view *v, char **out, struct err *e);

/* What a hook reads on its stdin (runtime-spec "state"): ociVersion, id,
 * status, pid, bundle, annotations, on one line. *out malloc'ed. */
int rt_state_render_hook(const struct rt_state_view *v, char **out, struct err *e);

/* `list`: json (an array of state objects, one line) or runc's table
 * (ID PID STATUS BUNDLE CREATED OWNER), or with quiet the IDs alone. */
int rt_state_render_list(const struct rt_state_view *v, size_t n, bool json, bool quiet, char **out,
			 struct err *e);

/* `features`: runc's document (runtime-spec features.md), indented. */
int rt_state_render_features(char **out, struct err *e);

/* `spec`: a starting config.json for a bundle whose rootfs is ./rootfs
 * (runc's example, but without a terminal and with hostname "kiln"),
 * indented. */
int rt_state_render_spec(char **out, struct err *e);

#endif
