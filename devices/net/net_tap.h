/*
 * net_tap: the TAP backend of virtio-net (net_backend.h's interface).
 */
#ifndef KILN_NET_TAP_H
#define KILN_NET_TAP_H

#include "devices/net/net_backend.h"

/*
 * Attach to TAP device `ifname`, creating it when it does not exist (needs
 * CAP_NET_ADMIN). The device is used without IFF_VNET_HDR: no offloads.
 */
int net_tap_open(const char *ifname, struct net_backend **out, struct err *e);

#endif
