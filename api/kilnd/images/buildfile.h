/*
 * buildfile: the build file of a template (docs/api.md, "Templates"), a
 * subset of Dockerfile syntax, and the step cache keys derived from it.
 *
 * Contract:
 *  - Pure (jansson and SHA-256, lib/digest): text in, steps out, so the whole
 *    file is checked before anything boots.
 *  - Syntax: one instruction per logical line; a line ending in `\`
 *    continues on the next; `#` starts a comment line; blank lines are
 *    skipped; instruction names are case-insensitive. FROM first and only
 *    once; RUN (shell form, run by /bin/sh -c, or JSON exec form), COPY
 *    [--chown=root|user] SRC... DEST (JSON form too), ENV k=v [k2=v2 ...]
 *    and the legacy ENV k v, WORKDIR, USER (root or user: the two users a
 *    kiln guest has), and READY [--timeout=S] COMMAND, at most once and
 *    last. Anything else is refused with its line number and what to use
 *    instead (ADD: COPY; CMD/ENTRYPOINT: the exec request; ...).
 *  - Values are literal: no $VAR substitution, no globs in COPY sources.
 *  - Bounded: BUILDFILE_MAX bytes, BUILDFILE_STEPS_MAX instructions,
 *    BUILDFILE_ARGS_MAX words or variables per instruction; a NUL byte or
 *    invalid UTF-8 is refused.
 *  - COPY sources are context-relative names normalised like tar members
 *    (no absolute path, no `..`; "." is the whole context); the
 *    destination is absolute once WORKDIR is applied.
 */
#ifndef KILN_BUILDFILE_H
#define KILN_BUILDFILE_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "api/kilnd/core/api_error.h"

#define BUILDFILE_MAX (64u << 10)
#define BUILDFILE_STEPS_MAX 128
#define BUILDFILE_ARGS_MAX 64
#define BUILDFILE_PATH_MAX 4096
#define BUILDFILE_READY_TIMEOUT_DEFAULT 60
#define BUILDFILE_READY_TIMEOUT_MAX 3600
/* A step's cache key: 64 lowercase hex digits of a SHA-256. */
#define BUILDFILE_KEY_LEN 64

enum bf_op { BF_FROM, BF_RUN, BF_COPY, BF_ENV, BF_WORKDIR, BF_USER, BF_READY };

struct bf_step {
	enum bf_op op;
	unsigned line; /* where the instruction starts (1-based) */
	char *canon;   /* its normalised text: what the cache key hashes */
	char *text;    /* the instruction as written (continuations joined), for the log */
	/* RUN, READY: argv (shell: one element, the /bin/sh -c command) */
	char **argv;
	size_t argc;
	bool shell;
	unsigned timeout_s; /* READY */
	/* COPY: sources (normalised), destination (absolute), --chown */
	char **src;
	size_t nsrc;
	char *dest;
	bool dest_dir; /* the destination ended in '/', or several sources */
	int chown;     /* -1: none; 0: root; 1: user */
	/* FROM: the base; WORKDIR: the absolute directory; USER: "root" or "user" */
	char *arg;
	/* ENV: the variables it sets, in order */
	char **env_keys, **env_vals;
	size_t nenv;
};

struct buildfile {
	struct bf_step *steps;
	size_t n;
	/* What the file leaves as exec defaults: env (object, never NULL
	 * after a parse), working_dir and user (NULL: not set). */
	json_t *env;
	const char *working_dir, *user;
};

/* Parse text[0..len). 0 with *bf (buildfile_free it), or -1 with e
 * (bad_field, naming the line). */
int buildfile_parse(const char *text, size_t len, struct buildfile *bf, struct api_err *e);
/* The same with relative COPY destinations and WORKDIRs resolved against
 * workdir, the base's working directory (NULL or not absolute: "/"). */
int buildfile_parse_in(const char *text, size_t len, const char *workdir, struct buildfile *bf,
		       struct api_err *e);

/*
 * The FROM step's extra cache input: the base's digest (or template id)
 * and the build sandbox's resolved shape, so a cached prefix is only
 * forked into a sandbox of the same cpus, memory and disk. out[cap].
 */
void buildfile_from_input(const char *base, unsigned cpus, unsigned memory_mib, unsigned disk_mib,
			  char *out, size_t cap);
void buildfile_free(struct buildfile *bf);

/* "FROM", "RUN", ... */
const char *buildfile_op_name(enum bf_op op);

/* Does the step change the file system (and so gets a checkpoint)? */
bool buildfile_step_writes(const struct bf_step *s);

/*
 * A step's cache key: SHA-256 over the parent step's key ("" for FROM),
 * the step's normalised text and extra (FROM: the base's digest or
 * template id; COPY: the digest of the context content it copies; NULL
 * otherwise), each length-prefixed so no two inputs collide.
 */
void buildfile_step_key(const char *parent, const char *canon, const char *extra,
			char out[BUILDFILE_KEY_LEN + 1]);

/* Is the normalised context member `name` copied by COPY source `src`
 * (src itself, or beneath it; "." is everything)? Then *rel is its name
 * relative to the copy's root (for a directory source, beneath it; for
 * a file source, the file's base name). */
bool buildfile_copy_match(const char *src, const char *name, const char **rel);

#endif
