/*
 * What libfabric-sys binds: libfabric's headers, plus one function-pointer
 * typedef per exported call the conduit makes (the library is opened with
 * dlopen, so these are resolved with dlvsym, not linked).
 */
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

typedef __typeof__(&fi_version) fi_version_fn;
typedef __typeof__(&fi_getinfo) fi_getinfo_fn;
typedef __typeof__(&fi_freeinfo) fi_freeinfo_fn;
typedef __typeof__(&fi_dupinfo) fi_dupinfo_fn;
typedef __typeof__(&fi_fabric) fi_fabric_fn;
typedef __typeof__(&fi_strerror) fi_strerror_fn;
