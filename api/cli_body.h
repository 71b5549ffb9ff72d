/*
 * cli_body: the kiln CLI's command lines turned into kilnd requests
 * (docs/api.md): create and exec bodies, list filters, cp operands.
 *
 * Contract:
 *  - Pure: no I/O, no global state. Each builder scans the command's
 *    words with cli_scan (so global options may sit among them) and
 *    returns 0 with a new JSON body the caller frees, or -1 with a
 *    one-line usage message in err.
 *  - Values are checked only as far as the CLI must (integers are
 *    integers, KEY=VALUE has a key); ranges are kilnd's to enforce, so the
 *    limits live in one place and its message names them.
 */
#ifndef KILN_CLI_BODY_H
#define KILN_CLI_BODY_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "cli_opts.h"

/* kilnd's sandbox ids are short hex; anything longer is a typo. */
#define CLI_ID_MAX 64

/* kiln create [options]: the POST /v1/sandboxes body. */
int cli_create_body(int argc, char **argv, struct cli_globals *g, json_t **body, char *err, size_t errsz);

struct cli_exec_req {
	char id[CLI_ID_MAX + 1];
	json_t *body; /* the POST .../exec body */
	bool stream;  /* ?stream=1 (NDJSON) */
	bool send_stdin; /* -i: send our stdin (the caller fills stdin_base64) */
};

/* kiln exec ID [options] [--] ARGV...: the id and the exec body. */
int cli_exec_parse(int argc, char **argv, struct cli_globals *g, struct cli_exec_req *req, char *err, size_t errsz);

/*
 * kiln ls [--state S] [--label K=V]...: the query string ("" or
 * "?state=...&label=..."), percent-encoded, into q (qsz bytes).
 */
int cli_list_query(int argc, char **argv, struct cli_globals *g, char *q, size_t qsz, char *err, size_t errsz);

/* One "ID" operand (inspect, stop, start, rm): exactly one positional. */
int cli_one_id(int argc, char **argv, struct cli_globals *g, char *id, char *err, size_t errsz);

struct cli_cp_req {
	bool upload;		   /* LOCAL -> ID:PATH */
	char id[CLI_ID_MAX + 1];
	const char *guest_path;	   /* points into argv */
	const char *local;	   /* "-" is stdin / stdout */
	const char *user;	   /* NULL: kilnd's default */
	bool parents;		   /* upload: create missing directories */
};

/*
 * kiln cp [--user U] [--parents] SRC DST: exactly one of SRC and DST is
 * ID:PATH (PATH absolute); a local path holding ':' is written ./a:b.
 */
int cli_cp_parse(int argc, char **argv, struct cli_globals *g, struct cli_cp_req *req, char *err, size_t errsz);

/*
 * Percent-encode s (RFC 3986 unreserved kept, '/' kept) into out (osz
 * bytes). -ENAMETOOLONG when it does not fit.
 */
int cli_url_encode(const char *s, char *out, size_t osz);

#endif
