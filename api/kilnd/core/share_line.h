/*
 * share_line: the lines of a client share (docs/api.md, "Client shares"),
 * checked and written anew by kilnd on their way between kiln-vmm and
 * the API client that serves the share (share_relay.h).
 *
 * Contract:
 *  - Pure (jansson and lib/base only): one line in (without its '\n'),
 *    0 and the canonical line out (compact JSON, malloc'd, no '\n'), or
 *    -1 and one line saying why. Nothing is forwarded as it came: only
 *    the fields the protocol knows, each checked, are written again, so
 *    neither end can smuggle bytes, a duplicate key or a huge number to
 *    the other.
 *  - Requests come from kiln-vmm (hostile: a compromised VMM): a JSON
 *    object of exactly id, op, path and the op's fields; id 1..2^32-1;
 *    path absolute, components neither empty, "." nor ".." (NUL is
 *    refused by the JSON reader), each at most SHARE_NAME_MAX bytes, the
 *    whole at most SHARE_PATH_MAX; read size 1..SHARE_IO_MAX; write data
 *    canonical base64 of at most SHARE_IO_MAX bytes; mode 0..07777.
 *  - Replies come from the client (hostile too: any program on kilnd's
 *    socket the sandbox's owner lets in) and are checked against the one
 *    request outstanding: the same id, either {"error": NAME} with NAME
 *    from SHARE_ERRORS or the op's fields (stat: type, size, optional
 *    mode and mtime; readdir: at most SHARE_ENTRIES_MAX entries of one
 *    component and a type; read: data of at most the size asked; write:
 *    a size of at most the bytes sent; the rest: nothing).
 *  - Bounded: a line is at most SHARE_LINE_MAX bytes with its '\n'.
 */
#ifndef KILN_SHARE_LINE_H
#define KILN_SHARE_LINE_H

#include <stddef.h>
#include <stdint.h>

/* The shared plan's FS_REMOTE_LINE_MAX: one line with its '\n'. */
#define SHARE_LINE_MAX 262144
#define SHARE_IO_MAX 131072
#define SHARE_PATH_MAX 4096
#define SHARE_NAME_MAX 255
#define SHARE_ENTRIES_MAX 10000
#define SHARE_WHY_MAX 160

/* The error names a reply may carry, space-separated. */
#define SHARE_ERRORS                                                                          \
	"ENOENT EEXIST ENOTDIR EISDIR ENOTEMPTY EACCES EPERM EROFS ENOSPC EINVAL EIO ENOSYS " \
	"EFBIG ENAMETOOLONG"

enum share_op {
	SHARE_OP_STAT,
	SHARE_OP_READDIR,
	SHARE_OP_READ,
	SHARE_OP_WRITE,
	SHARE_OP_CREATE,
	SHARE_OP_MKDIR,
	SHARE_OP_UNLINK,
	SHARE_OP_RMDIR,
	SHARE_OP_RENAME,
	SHARE_OP_TRUNCATE,
};

/* What a reply is checked against. */
struct share_req {
	uint32_t id; /* 0: none (the line had no valid id) */
	enum share_op op;
	uint64_t size; /* read: the most bytes the reply may hold; write: the bytes sent */
};

/*
 * A request line from kiln-vmm. 0 with *req and *canon, or -1 with why
 * (and req->id set when the line had a valid id, so the caller can
 * answer it EIO rather than leave kiln-vmm waiting).
 */
int share_request_check(const char *line, size_t n, struct share_req *req, char **canon,
			char why[SHARE_WHY_MAX]);

/* A reply line from the client to req. 0 with *canon, or -1 with why;
 * -2 with why for a reply that names another id than req's (none
 * outstanding, or a late answer to one kiln-vmm gave up on): it says
 * nothing about req, which still waits for its own answer. */
int share_reply_check(const char *line, size_t n, const struct share_req *req, char **canon,
		      char why[SHARE_WHY_MAX]);

/* {"id":id,"error":"EIO"}, what kiln-vmm gets when no client answers
 * (or the client's answer was refused); NULL when out of memory. */
char *share_reply_eio(uint32_t id);

/* {"kind":"error","message":msg}: what the client gets for a refused line. */
char *share_client_error(const char *msg);

#endif
