/*
 * exec_spec: the body of POST /v1/sandboxes/{id}/exec (docs/api.md),
 * validated into the agent client's exec options; also run's body
 * (POST .../run: a language and its code instead of argv), which shares
 * every other field, so an option added here reaches both.
 *
 * Contract:
 *  - Pure (jansson only). Unknown fields are refused; the first failing
 *    check wins, in the order of the table in docs/api.md.
 *  - The limits are the agent's (docs/agent-protocol.md, section 5), so
 *    a request that passes here is not refused by the agent for its
 *    shape; output_cap is bounded lower for buffered execs, whose output
 *    kilnd holds in memory (and then in base64).
 *  - A parsed spec holds a reference to the body (argv, cwd and env
 *    point into it) and owns its decoded stdin and merged environment;
 *    release it with exec_spec_free().
 */
#ifndef KILN_EXEC_SPEC_H
#define KILN_EXEC_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <kiln/agent.h>

#include "api/proto/agent_proto.h"
#include "api/kilnd/core/api_error.h"

/* Buffered output is held in memory, then encoded: 16 MiB per stream. */
#define EXEC_OUTPUT_CAP_BUFFERED_MAX (16u << 20)

struct exec_spec {
	const char *what;  /* names the request in messages ("exec") */
	json_t *body;      /* reference held */
	const char **argv; /* argc entries + NULL, strings borrowed from body */
	size_t argc;
	bool shell;
	bool confine;      /* own mount namespace showing /workspace (docs/api.md) */
	const json_t *env; /* borrowed from body; NULL when absent */
	const char *cwd;   /* NULL: the user's home */
	enum agent_user user;
	bool user_given;        /* the request named a user */
	json_t *image_defaults; /* exec_spec_image_defaults(): reference held (cwd may point into it) */
	uint32_t timeout_ms;
	uint8_t *stdin_data; /* owned; NULL when none */
	size_t stdin_len;
	uint32_t output_cap;  /* AGENT_OUTPUT_CAP_DEFAULT unless given */
	bool base64_output;   /* output_encoding "base64" */
	enum agent_lang lang; /* run: the language; AGENT_LANG_NONE for exec */
	const char *code;     /* run: borrowed from body */
	size_t code_len;

	struct agent_env *merged; /* exec_env_merge() result, owned */
	size_t nmerged;
	char **envp; /* merged as libkiln takes it ("K=V", "K": unset), NULL-terminated, owned */
};

/*
 * Validate an exec body. streaming raises output_cap's limit to the
 * agent's. 0, or -1 with e set; *out needs exec_spec_free() either way.
 */
int exec_spec_parse(json_t *body, bool streaming, struct exec_spec *out, struct api_err *e);

/* The same for a request that shares exec's fields (process create);
 * `what` (a static string) names it in messages. */
int exec_spec_parse_as(json_t *body, bool streaming, const char *what, struct exec_spec *out,
		       struct api_err *e);

/*
 * Validate a run body: `language` and `code` instead of argv and shell;
 * code and stdin together at most AGENT_LEN_MAX bytes (too_large).
 */
int run_spec_parse(json_t *body, bool streaming, struct exec_spec *out, struct api_err *e);

/*
 * Merge the sandbox's environment (object of strings, may be NULL) with
 * the exec's own (it wins; null values unset) into s->merged and
 * s->envp, ready for kiln_exec_opts. -1 with e (too_large) past AGENT_ENV_MAX.
 * Pointers in s->merged borrow from base and s->body: keep both alive.
 */
int exec_env_merge(struct exec_spec *s, const json_t *base, struct api_err *e);

/*
 * The sandbox image's runtime defaults (images.h: an imported image's
 * config, {"working_dir", "user", ...}; NULL: none) under the request's
 * own: working_dir becomes cwd when the request gave none (and, for a
 * confined process, only when it is visible there), user ("root", "0",
 * "0:0"; "user", "1000", "1000:1000") the user when it gave none; any
 * other user is not one kiln can run as and is ignored. A reference to
 * defaults is kept.
 */
void exec_spec_image_defaults(struct exec_spec *s, json_t *defaults);

/* libkiln's options from a parsed (and merged) spec; they point into s. */
void exec_spec_opts(const struct exec_spec *s, struct kiln_exec_opts *o);

void exec_spec_free(struct exec_spec *s);

#endif
