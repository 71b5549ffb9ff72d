/*
 * agent_list: list_dir (docs/agent-protocol.md, section 7.5). One `entry`
 * line per entry, depth-first with each directory before its contents,
 * over agent_walk (bounded descriptors and memory whatever the depth).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "guest-init/agent/agent_files_ops.h"
#include "guest-init/agent/agent_walk.h"

static int send_entry(struct agent_conn *c, const struct walk_entry *e)
{
	char target[AGENT_PATH_MAX + 1];
	struct agent_stat as;
	struct agent_line l;

	memset(&as, 0, sizeof(as));
	as.path = e->path;
	as.path_len = e->path_len;
	as.depth = e->depth;
	as.st_mode = e->st.st_mode;
	as.size = (uint64_t)e->st.st_size;
	as.uid = e->st.st_uid;
	as.gid = e->st.st_gid;
	as.nlink = e->st.st_nlink;
	as.mtime_ns = fs_mtime_ns(&e->st);
	if (S_ISLNK(e->st.st_mode)) {
		ssize_t n = readlinkat(e->dirfd, e->name, target, sizeof(target));

		if (n < 0 || (size_t)n >= sizeof(target))
			n = 0;
		as.target = target;
		as.target_len = (size_t)n;
	}
	return agent_conn_send_line(c, &l, agent_line_stat(&l, &as, true));
}

void op_list_dir(struct agent_conn *c, const struct agent_file_req *f)
{
	char prefix[AGENT_PATH_MAX + 1];
	size_t n = strlen(f->path);
	struct walk w;
	struct walk_entry e;
	uint64_t count = 0;
	bool truncated = false;
	int fd, r;

	fd = open(f->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		fs_send_errno(c, errno, "list_dir '%.200s'", f->path);
		return;
	}
	/* Entry paths are the request's path + "/" + name: "/srv/" lists
	 * "/srv/app", "/" lists "/app". */
	while (n > 1 && f->path[n - 1] == '/')
		n--;
	memcpy(prefix, f->path, n);
	prefix[n] = '\0';
	r = walk_open(&w, fd, prefix);
	if (r < 0) {
		fs_send_errno(c, r, "list_dir '%.200s'", f->path);
		return;
	}
	while ((r = walk_next(&w, &e)) > 0) {
		if (count == f->limit) {
			truncated = true;
			break;
		}
		if (send_entry(c, &e) < 0)
			goto out; /* the host is gone: stop producing */
		count++;
		/* Symlinks are listed, never descended into (lstat). A
		 * subdirectory that cannot be opened is counted as skipped. */
		if (S_ISDIR(e.st.st_mode) && e.depth < f->depth && walk_descend(&w, &e) < 0)
			w.skipped++;
	}
	if (r < 0) {
		fs_send_errno(c, r, "list_dir '%.200s' after %llu entries", f->path,
			      (unsigned long long)count);
	} else {
		const struct agent_kv kv[] = {
			AGENT_INT("count", count),
			AGENT_BOOL("truncated", truncated),
			AGENT_INT("skipped", w.skipped),
		};
		struct agent_line l;

		agent_conn_send_line(c, &l, agent_line_end(&l, kv, 3));
	}
out:
	walk_close(&w);
}
