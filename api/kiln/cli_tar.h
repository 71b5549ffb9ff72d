/*
 * cli_tar: `kiln cp` of directories, the local side of kilnd's tar.gz
 * archives (docs/api.md, GET/PUT .../archive): a local tree written as a
 * ustar stream, and a ustar stream extracted into a local directory.
 *
 * Contract:
 *  - The tar format is the agent's own (api/proto/agent_tar.h): headers
 *    come from tar_header_build, and the stream is read by tar_reader,
 *    which refuses absolute names, `..` components and symlinks whose
 *    target climbs out of the tree before a member is reported. gzip is
 *    the caller's (gz_stream.h) around these byte streams.
 *  - No global state; filesystem calls only relative to directory file
 *    descriptors the caller opened, so unit tests run them in a scratch
 *    directory.
 *  - Writing never follows a symlink: the walk opens every directory and
 *    file with O_NOFOLLOW, and a symlink is stored as a symlink. One whose
 *    target leaves the tree (absolute, or climbing above the copied
 *    directory) is skipped with a warning, because the agent refuses the
 *    whole archive for it (400 unsafe_path). FIFOs, sockets and devices
 *    are skipped and counted; a file is stored with the size fstat gave
 *    when it was opened, and one that shrinks while read is an error (the
 *    archive would no longer match its header).
 *  - Extraction never writes through a symlink: every parent component is
 *    opened with O_NOFOLLOW | O_DIRECTORY (missing ones are created), and
 *    a member's own name is removed first when something other than a
 *    directory is there, then created with O_EXCL | O_NOFOLLOW. A
 *    symlink already in the destination is replaced, never followed.
 *    A hard link must name a regular file already in the destination
 *    (looked at without following it): one to a symlink would be that
 *    symlink again at another depth, pointing out of the tree.
 *    Modes are the archive's less the umask; directories keep u+rwx so
 *    their members can be created; files get the archive's mtime.
 */
#ifndef KILN_CLI_TAR_H
#define KILN_CLI_TAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "api/proto/agent_tar.h"
#include "lib/base/err.h"

/* Directory nesting the writer follows (each level holds one descriptor). */
#define CLI_TAR_DEPTH_MAX 128
#define CLI_TAR_ERR_MAX 512

struct cli_tar_stats {
	uint64_t files, dirs, symlinks, hardlinks, skipped;
	uint64_t bytes; /* file data */
};

/* Bytes of the archive; 0 or -errno (which stops the walk). */
typedef int (*cli_tar_out_fn)(void *arg, const void *p, size_t n);
/* One line of advice for the user (a skipped member), without newline. */
typedef void (*cli_tar_warn_fn)(void *arg, const char *msg);

/*
 * Write the tree under dirfd (its contents, names relative to it) as a
 * ustar stream ending in the two zero blocks. 0, or -errno with e (a
 * local failure, naming the path; e->msg empty for out's own value).
 */
int cli_tar_write_dir(int dirfd, cli_tar_out_fn out, void *out_arg, cli_tar_warn_fn warn,
		      void *warn_arg, struct cli_tar_stats *st, struct err *e);

struct cli_untar {
	struct tar_reader rd;
	int root;      /* the destination directory (not owned) */
	int fd;        /* the file being written, or -1 */
	int64_t mtime; /* of that file */
	uint32_t mtime_nsec;
	mode_t umask;
	bool failed, ended;
	struct cli_tar_stats st;
	char err[CLI_TAR_ERR_MAX];
};

/* Extract into root. what names the destination in messages. */
void cli_untar_init(struct cli_untar *u, int root, mode_t umask, const char *what);
/* Feed archive bytes, in any split. 0, or -1 with u->err (sticky). */
int cli_untar_feed(struct cli_untar *u, const void *p, size_t n);
/* The archive ended: 0 when it ended at a member boundary, else -1. */
int cli_untar_finish(struct cli_untar *u);
void cli_untar_free(struct cli_untar *u);

#endif
