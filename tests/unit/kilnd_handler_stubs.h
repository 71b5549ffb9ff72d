/*
 * kilnd_handler_stubs: a stand-in for every handler the route table
 * (api/kilnd/endpoints/routes.c) names, so a test links the table alone
 * (the real handlers need the whole daemon). Each records its name in
 * stub_called, so a test can tell which one a route runs. A handler added
 * to routes.h needs its line here: the link says which is missing.
 * Include in one file of a test program only.
 */
#ifndef KILN_KILND_HANDLER_STUBS_H
#define KILN_KILND_HANDLER_STUBS_H

#include "api/kilnd/endpoints/routes.h"

static const char *stub_called;

#define HANDLER_STUB(name)            \
	void name(struct http_req *r) \
	{                             \
		(void)r;              \
		stub_called = #name;  \
	}

HANDLER_STUB(handle_health)
HANDLER_STUB(handle_metrics)
HANDLER_STUB(handle_images)
HANDLER_STUB(handle_image_import_begin)
HANDLER_STUB(handle_image_get)
HANDLER_STUB(handle_image_delete)
HANDLER_STUB(handle_templates)
HANDLER_STUB(handle_template_build_begin)
HANDLER_STUB(handle_template_get)
HANDLER_STUB(handle_template_delete)
HANDLER_STUB(handle_secret_list)
HANDLER_STUB(handle_secret_create)
HANDLER_STUB(handle_secret_get)
HANDLER_STUB(handle_secret_put)
HANDLER_STUB(handle_secret_delete)
HANDLER_STUB(handle_sandbox_list)
HANDLER_STUB(handle_sandbox_create)
HANDLER_STUB(handle_sandbox_get)
HANDLER_STUB(handle_sandbox_delete)
HANDLER_STUB(handle_sandbox_start)
HANDLER_STUB(handle_sandbox_stop)
HANDLER_STUB(handle_sandbox_pause)
HANDLER_STUB(handle_sandbox_resume)
HANDLER_STUB(handle_sandbox_hibernate)
HANDLER_STUB(handle_sandbox_wake)
HANDLER_STUB(handle_exec)
HANDLER_STUB(handle_run)
HANDLER_STUB(handle_file_get)
HANDLER_STUB(handle_file_put_begin)
HANDLER_STUB(handle_proc_create)
HANDLER_STUB(handle_shell)
HANDLER_STUB(handle_proc_list)
HANDLER_STUB(handle_proc_get)
HANDLER_STUB(handle_proc_output)
HANDLER_STUB(handle_proc_stdin)
HANDLER_STUB(handle_proc_signal)
HANDLER_STUB(handle_proc_wait)
HANDLER_STUB(handle_proc_resize)
HANDLER_STUB(handle_proc_tty)
HANDLER_STUB(handle_file_stat)
HANDLER_STUB(handle_file_list)
HANDLER_STUB(handle_file_mkdir)
HANDLER_STUB(handle_file_remove)
HANDLER_STUB(handle_file_rename)
HANDLER_STUB(handle_file_watch)
HANDLER_STUB(handle_archive_get)
HANDLER_STUB(handle_archive_put_begin)
HANDLER_STUB(handle_checkpoint_list)
HANDLER_STUB(handle_checkpoint_create)
HANDLER_STUB(handle_checkpoint_get)
HANDLER_STUB(handle_checkpoint_delete)
HANDLER_STUB(handle_checkpoint_restore)
HANDLER_STUB(handle_firewall_get)
HANDLER_STUB(handle_firewall_put)
HANDLER_STUB(handle_firewall_log)
HANDLER_STUB(handle_egress_log)
HANDLER_STUB(handle_egress_decisions)
HANDLER_STUB(handle_share_serve)
HANDLER_STUB(handle_port_add)
HANDLER_STUB(handle_port_list)
HANDLER_STUB(handle_port_remove)
HANDLER_STUB(handle_preview_add)
HANDLER_STUB(handle_preview_list)
HANDLER_STUB(handle_preview_remove)

#endif
