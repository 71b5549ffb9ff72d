#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "devices/net/net_tap.h"

struct tap {
	struct net_backend b;
	char ifname[IFNAMSIZ];
};

static ssize_t tap_send(struct net_backend *b, const void *frame, size_t len)
{
	ssize_t n = write(b->fd, frame, len);

	return n < 0 ? -errno : n;
}

static ssize_t tap_recv(struct net_backend *b, void *buf, size_t cap)
{
	ssize_t n = read(b->fd, buf, cap);

	if (n < 0)
		return errno == EAGAIN ? 0 : -errno;
	return n;
}

static void tap_close(struct net_backend *b)
{
	close(b->fd);
	free(b);
}

int net_tap_open(const char *ifname, struct net_backend **out, struct err *e)
{
	struct ifreq ifr = { 0 };
	struct tap *t;
	int fd;

	if (!ifname || !*ifname || strlen(ifname) >= IFNAMSIZ)
		return err_set(e, EINVAL, "tap name '%s': must be 1-%d characters",
			       ifname ? ifname : "", IFNAMSIZ - 1);
	fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return err_set(e, errno,
			       "/dev/net/tun: %s (load the tun module; root or CAP_NET_ADMIN needed)",
			       strerror(errno));
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
	memcpy(ifr.ifr_name, ifname, strlen(ifname));
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		int err = errno;

		close(fd);
		return err_set(e, err, "tap '%s': %s%s", ifname, strerror(err),
			       err == EPERM
				       ? " (creating or attaching needs CAP_NET_ADMIN, or a tap owned by this user)"
				       : "");
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		close(fd);
		return err_set(e, ENOMEM, "out of memory");
	}
	memcpy(t->ifname, ifname, strlen(ifname));
	t->b = (struct net_backend){
		.name = "tap", .fd = fd, .send = tap_send, .recv = tap_recv, .close = tap_close
	};
	*out = &t->b;
	return 0;
}
