/*
 * agent_files: the guest agent's file requests (docs/agent-protocol.md,
 * section 7.5): read, write, stat, exists, list_dir, mkdir, remove,
 * rename, tar_upload, tar_download.
 *
 * Contract:
 *  - Called by the connection's thread right after agent_conn_next()
 *    returned the request (its payload, if any, not read yet).
 *  - Runs the operation as the request's user: fsuid/fsgid of this thread
 *    only, supplementary groups dropped for "user", a thread-private umask
 *    of 0 so modes are exact; all of it restored before returning.
 *  - Sends every reply line, error lines included, and returns. It reads
 *    uploads itself (deadline: AGENT_UPLOAD_IDLE_MS per message). The
 *    caller then frees the request and closes the connection.
 *  - Memory and descriptors per call are bounded (64 KiB transfer buffer,
 *    a few directory descriptors), whatever the file or tree size.
 */
#ifndef KILN_AGENT_FILES_H
#define KILN_AGENT_FILES_H

#include "guest-init/agent/agent_conn.h"

void agent_files_serve(struct agent_conn *c, struct agent_msg *req);

#endif
