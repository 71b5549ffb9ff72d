#include "devices/fs/virtio_fs.h"

#include <endian.h>
#include <stdbool.h>
#include <errno.h>
#include <linux/fuse.h>
#include <stdlib.h>
#include <string.h>

#include "devices/fs/fuse_remote.h"
#include "devices/fs/fuse_remote_io.h"
#include "devices/fs/fuse_server.h"

#define FS_QUEUES 2 /* hiprio + one request queue (5.11.2) */

/* Config space layout (5.11.4): tag[36], le32 num_request_queues. */
struct fs_config {
	char tag[VIRTIO_FS_TAG_MAX];
	uint32_t num_request_queues;
} __attribute__((packed));

struct virtio_fs {
	struct fuse_server *srv;    /* a host directory's, or: */
	struct fuse_remote *remote; /* a client-served share's, over io */
	struct fuse_remote_io io;
	struct fs_config config;
	uint8_t *req;             /* FUSE_SERVER_MAX_REQUEST: the gathered request */
	uint8_t *rep;             /* FUSE_SERVER_MAX_REPLY: the reply before scattering */
	struct virtq_chain chain; /* 8 KiB of buffer lists: kept off the stack */
};

static uint64_t fs_features(struct virtio_dev *d)
{
	(void)d;
	return 0;
}

static void fs_read_config(struct virtio_dev *d, uint32_t off, void *buf, uint32_t len)
{
	struct virtio_fs *fs = d->priv;

	/* The transport checked off + len against config_len. */
	memcpy(buf, (const uint8_t *)&fs->config + off, len);
}

static void fs_write_config(struct virtio_dev *d, uint32_t off, const void *buf, uint32_t len)
{
	/* 5.11.4: the configuration is read-only for the driver. */
	(void)d;
	(void)off;
	(void)buf;
	(void)len;
}

/* One chain, one FUSE request; returns the bytes written to the chain. */
static uint32_t fs_serve(struct virtio_fs *fs, const struct virtq_chain *c)
{
	size_t cap = c->in_len < FUSE_SERVER_MAX_REPLY ? (size_t)c->in_len : FUSE_SERVER_MAX_REPLY;
	size_t got;
	long n;

	if (c->out_len > FUSE_SERVER_MAX_REQUEST) {
		struct fuse_in_header ih = { 0 };
		struct fuse_out_header oh = { .len = sizeof(oh), .error = -E2BIG };

		/* Beyond the negotiated max_write: answer without reading it. */
		if (c->in_len < sizeof(oh))
			return 0;
		virtq_chain_read(c, 0, &ih, sizeof(ih));
		oh.unique = ih.unique;
		return (uint32_t)virtq_chain_write(c, 0, &oh, sizeof(oh));
	}
	got = virtq_chain_read(c, 0, fs->req, (size_t)c->out_len);
	n = fs->remote ? fuse_remote_io_handle(&fs->io, fs->remote, fs->req, got, fs->rep, cap)
		       : fuse_server_handle(fs->srv, fs->req, got, fs->rep, cap);
	if (n <= 0)
		return 0;
	return (uint32_t)virtq_chain_write(c, 0, fs->rep, (size_t)n);
}

static void fs_notify(struct virtio_dev *d, int qi)
{
	struct virtio_fs *fs = d->priv;
	struct virtq *q = &d->vq[qi];
	struct virtq_chain *c = &fs->chain;
	int r, pushed = 0;

	if (fs->remote)
		fuse_remote_io_batch(&fs->io);
	while ((r = virtq_pop_or_arm(q, c)) > 0) {
		uint32_t written = fs_serve(fs, c);

		if (virtq_push(q, c->head, written) < 0) {
			virtio_dev_fail(d, "used ring unusable");
			break;
		}
		pushed = 1;
	}
	if (r < 0)
		virtio_dev_fail(d,
				qi == 0 ? "malformed descriptor chain on the hiprio queue"
					: "malformed descriptor chain on the request queue");
	if (pushed)
		virtio_dev_interrupt(d, qi);
}

static void fs_reset(struct virtio_dev *d)
{
	struct virtio_fs *fs = d->priv;

	/* The driver is gone: so is every node and handle it held. */
	if (fs->remote)
		fuse_remote_reset(fs->remote);
	else
		fuse_server_reset(fs->srv);
}

static long fs_save(struct virtio_dev *d, void *buf, size_t len)
{
	struct virtio_fs *fs = d->priv;

	/* The client's tree and its connection are not the VM's to keep. */
	if (fs->remote)
		return -EOPNOTSUPP;
	return fuse_server_save(fs->srv, buf, len);
}

static int fs_restore(struct virtio_dev *d, const void *buf, size_t len)
{
	struct virtio_fs *fs = d->priv;
	struct err e = { { 0 } };
	unsigned stale;
	int err;

	if (fs->remote) {
		virtio_dev_log(d, "virtio-fs %.36s: a client-served share is never in a snapshot",
			       fs->config.tag);
		return -EINVAL;
	}
	err = fuse_server_restore(fs->srv, buf, len, &e);

	if (err < 0) {
		virtio_dev_log(d, "virtio-fs %.36s: %s", fs->config.tag, e.msg);
		return err;
	}
	if ((stale = fuse_server_stale(fs->srv)))
		virtio_dev_log(
			d,
			"virtio-fs %.36s: %u files in use were not found again in the share (the guest gets ESTALE on them)",
			fs->config.tag, stale);
	return 0;
}

static void fs_destroy(struct virtio_dev *d)
{
	struct virtio_fs *fs = d->priv;

	if (fs) {
		fuse_server_close(fs->srv);
		fuse_remote_free(fs->remote);
		fuse_remote_io_fini(&fs->io);
		free(fs->req);
		free(fs->rep);
		free(fs);
	}
	pthread_mutex_destroy(&d->lock);
	free(d);
}

static const struct virtio_dev_ops fs_ops = {
	.name = "virtio-fs",
	.device_id = VIRTIO_ID_FS,
	.num_queues = FS_QUEUES,
	.queue_max = 1024,
	.features = fs_features,
	.config_len = sizeof(struct fs_config),
	.read_config = fs_read_config,
	.write_config = fs_write_config,
	.notify = fs_notify,
	.reset = fs_reset,
	.save = fs_save,
	.restore = fs_restore,
	.destroy = fs_destroy,
};

/* The device's log: the io's problems (rate-limited there). */
static void remote_log(void *ctx, const char *line)
{
	virtio_dev_log(ctx, "%s", line);
}

static int remote_open(struct virtio_fs *fs, struct virtio_dev *d,
		       const struct virtio_fs_config *cfg, struct err *e)
{
	int t = cfg->remote_timeout_ms ? cfg->remote_timeout_ms : FS_REMOTE_TIMEOUT_MS_DEFAULT;
	int err = fuse_remote_io_init(&fs->io, cfg->remote, t);

	if (err == -EINVAL)
		return err_set(
			e, EINVAL,
			"virtio-fs %s: socket path '%s' (1 to 107 bytes) or timeout %d ms (%d to %d) out of range",
			cfg->tag, cfg->remote, t, FS_REMOTE_TIMEOUT_MS_MIN,
			FS_REMOTE_TIMEOUT_MS_MAX);
	if (err < 0 || (err = fuse_remote_new(&fs->remote, cfg->read_only)) < 0)
		return err_set(e, -err, "out of memory");
	fs->io.log = remote_log;
	fs->io.log_ctx = d;
	fs->io.name = fs->config.tag[VIRTIO_FS_TAG_MAX - 1] ? "(share)" : fs->config.tag;
	return 0;
}

int virtio_fs_create(const struct virtio_fs_config *cfg, struct virtio_dev **out, struct err *e)
{
	struct virtio_dev *d;
	struct virtio_fs *fs;
	size_t taglen;
	int err;

	/* Descriptors 0-2 are stdio (and 0 is what a zeroed config holds). */
	if (!cfg || (cfg->dir ? !cfg->dir[0] : cfg->dir_fd < 3 && !cfg->remote))
		return err_set(e, EINVAL, "virtio-fs: no host directory given");
	taglen = cfg->tag ? strlen(cfg->tag) : 0;
	if (taglen == 0 || taglen > VIRTIO_FS_TAG_MAX)
		return err_set(e, EINVAL, "virtio-fs: tag '%s' must be 1 to %d bytes",
			       cfg->tag ? cfg->tag : "", VIRTIO_FS_TAG_MAX);
	d = calloc(1, sizeof(*d));
	fs = calloc(1, sizeof(*fs));
	if (!d || !fs) {
		free(d);
		free(fs);
		return err_set(e, ENOMEM, "out of memory");
	}
	d->ops = &fs_ops;
	d->priv = fs;
	fs->io.fd = -1; /* no connection: a zeroed one would be stdin */
	pthread_mutex_init(&d->lock, NULL);
	/* Not touched until used: untouched pages cost no memory. */
	fs->req = malloc(FUSE_SERVER_MAX_REQUEST);
	fs->rep = malloc(FUSE_SERVER_MAX_REPLY);
	if (!fs->req || !fs->rep) {
		err = err_set(e, ENOMEM, "out of memory");
		goto fail;
	}
	memcpy(fs->config.tag, cfg->tag, taglen);
	fs->config.num_request_queues = htole32(1);
	if (!cfg->dir && cfg->remote)
		err = remote_open(fs, d, cfg, e);
	else
		err = cfg->dir ? fuse_server_open(&fs->srv, cfg->dir, cfg->read_only, e)
			       : fuse_server_open_fd(&fs->srv, cfg->dir_fd, cfg->read_only, e);
	if (err < 0)
		goto fail;
	*out = d;
	return 0;
fail:
	fs_destroy(d);
	return err;
}

/* The device's tag, as a string. */
static bool tag_is(const struct virtio_fs *fs, const char *tag)
{
	size_t n = strlen(tag);

	return n <= VIRTIO_FS_TAG_MAX && memcmp(fs->config.tag, tag, n) == 0 &&
		(n == VIRTIO_FS_TAG_MAX || fs->config.tag[n] == '\0');
}

int virtio_fs_graft(struct virtio_dev *d, const char *tag, const char *name, int fd)
{
	struct virtio_fs *fs = d->priv;
	int r;

	if (d->ops != &fs_ops || !tag_is(fs, tag))
		return -ENODEV;
	if (fs->remote)
		return -EOPNOTSUPP;
	pthread_mutex_lock(&d->lock);
	r = fd >= 0 ? fuse_server_graft(fs->srv, name, fd) : fuse_server_ungraft(fs->srv, name);
	pthread_mutex_unlock(&d->lock);
	return r;
}
