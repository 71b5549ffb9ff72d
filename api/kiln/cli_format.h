/*
 * cli_format: kilnd's JSON answers as text for people (without --json).
 *
 * Contract:
 *  - Pure: writes to the FILE * it is given (a test passes an
 *    open_memstream), no global state.
 *  - Every function takes the answer as kilnd sent it and returns -1
 *    without writing anything when its shape is not the documented one,
 *    so a mismatch between CLI and daemon is an error, not a blank table.
 *  - Strings from kilnd (labels, image names, hostnames: some set by other
 *    users) have control characters replaced by '?': a table cell cannot
 *    carry terminal escape sequences.
 */
#ifndef KILN_CLI_FORMAT_H
#define KILN_CLI_FORMAT_H

#include <stdio.h>

#include <jansson.h>

/* GET /v1/health: "ok  version 0.1.0  up 42s  2 sandboxes". */
int cli_format_health(FILE *out, const json_t *health);

/* GET /v1/images: NAME SIZE SOURCE PATH per image, then the kernel. */
int cli_format_images(FILE *out, const json_t *images);

/* GET /v1/sandboxes: ID STATE IMAGE CPUS MEMORY CREATED LABELS. */
int cli_format_list(FILE *out, const json_t *list);

/* "ID STATE" for start and stop (and a crashed sandbox's reason). */
int cli_format_state(FILE *out, const json_t *sandbox);

/* GET .../processes: ID PID STATE PTY OUTPUT ARGV. */
int cli_format_procs(FILE *out, const json_t *list);

/* A process's exit object (wait): "exit 3", "signal 15" or "timed out". */
int cli_format_exit(FILE *out, const json_t *exit);

/* A port mapping: "127.0.0.1:40123 -> guest port 8080" (and its target). */
int cli_format_port(FILE *out, const json_t *mapping);

/* GET .../ports: HOST GUEST TARGET OPEN TOTAL. */
int cli_format_ports(FILE *out, const json_t *list);

/* A preview (POST .../previews): its URL, its path URL and its token, one "name: value" a line. */
int cli_format_preview(FILE *out, const json_t *preview);

/* GET .../previews: PORT ACCESS URL, then each token-protected one's token. */
int cli_format_previews(FILE *out, const json_t *list);

/* GET .../files/list: one `ls -l` style line per entry (MODE UID GID SIZE MTIME PATH [-> TARGET]). */
int cli_format_fs_list(FILE *out, const json_t *listing);

/* GET .../files/stat: "path:", "kind:", "size:", "mode:", ... lines. */
int cli_format_stat(FILE *out, const json_t *stat);

/* "1.5 GiB" style size into buf. */
void cli_format_size(char *buf, size_t n, long long bytes);

#endif
