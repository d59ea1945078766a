/*
 * One-line exported wrappers for libfabric's static inline calls.
 *
 * Most of libfabric's API is static inline in its headers: each call
 * dispatches through an ops table hanging off the object (fid). Those
 * functions have no symbol in libfabric.so, so Rust cannot link to them;
 * shim.c compiles each into a real function named rfi_<name> with the
 * same parameters. Nothing here adds behaviour.
 */
#ifndef RGEX_LIBFABRIC_SHIM_H
#define RGEX_LIBFABRIC_SHIM_H

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

/* Values the headers spell as macros bindgen cannot evaluate (casts,
 * function-like macros). */
extern const uint64_t rfi_addr_unspec;   /* FI_ADDR_UNSPEC */
extern const uint64_t rfi_addr_notavail; /* FI_ADDR_NOTAVAIL */
extern const uint64_t rfi_key_notavail;  /* FI_KEY_NOTAVAIL */
extern const uint32_t rfi_header_version; /* FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION) */

uint32_t rfi_version(uint32_t major, uint32_t minor);
struct fi_info *rfi_allocinfo(void);

int rfi_close(struct fid *fid);
int rfi_domain(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **domain, void *context);
int rfi_endpoint(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep, void *context);
int rfi_av_open(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **av, void *context);
int rfi_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **cq, void *context);
int rfi_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr, struct fid_cntr **cntr, void *context);
int rfi_mr_reg(struct fid_domain *domain, const void *buf, size_t len, uint64_t acs, uint64_t offset,
               uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context);
int rfi_mr_bind(struct fid_mr *mr, struct fid *bfid, uint64_t flags);
int rfi_mr_enable(struct fid_mr *mr);
uint64_t rfi_mr_key(struct fid_mr *mr);
void *rfi_mr_desc(struct fid_mr *mr);
int rfi_ep_bind(struct fid_ep *ep, struct fid *bfid, uint64_t flags);
int rfi_enable(struct fid_ep *ep);
int rfi_getname(fid_t fid, void *addr, size_t *addrlen);
int rfi_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen);
int rfi_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen);
int rfi_av_insert(struct fid_av *av, const void *addr, size_t count, fi_addr_t *fi_addr, uint64_t flags,
                  void *context);
const char *rfi_av_straddr(struct fid_av *av, const void *addr, char *buf, size_t *len);

ssize_t rfi_send(struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t dest_addr, void *context);
ssize_t rfi_sendmsg(struct fid_ep *ep, const struct fi_msg *msg, uint64_t flags);
ssize_t rfi_senddata(struct fid_ep *ep, const void *buf, size_t len, void *desc, uint64_t data,
                     fi_addr_t dest_addr, void *context);
ssize_t rfi_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest_addr);
ssize_t rfi_recv(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src_addr, void *context);
ssize_t rfi_recvmsg(struct fid_ep *ep, const struct fi_msg *msg, uint64_t flags);

ssize_t rfi_write(struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t dest_addr, uint64_t addr,
                  uint64_t key, void *context);
ssize_t rfi_writemsg(struct fid_ep *ep, const struct fi_msg_rma *msg, uint64_t flags);
ssize_t rfi_read(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src_addr, uint64_t addr,
                 uint64_t key, void *context);
ssize_t rfi_readmsg(struct fid_ep *ep, const struct fi_msg_rma *msg, uint64_t flags);

ssize_t rfi_atomic(struct fid_ep *ep, const void *buf, size_t count, void *desc, fi_addr_t dest_addr,
                   uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op, void *context);
ssize_t rfi_fetch_atomic(struct fid_ep *ep, const void *buf, size_t count, void *desc, void *result,
                         void *result_desc, fi_addr_t dest_addr, uint64_t addr, uint64_t key,
                         enum fi_datatype datatype, enum fi_op op, void *context);
ssize_t rfi_compare_atomic(struct fid_ep *ep, const void *buf, size_t count, void *desc, const void *compare,
                           void *compare_desc, void *result, void *result_desc, fi_addr_t dest_addr,
                           uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op,
                           void *context);
ssize_t rfi_atomicmsg(struct fid_ep *ep, const struct fi_msg_atomic *msg, uint64_t flags);
int rfi_query_atomic(struct fid_domain *domain, enum fi_datatype datatype, enum fi_op op,
                     struct fi_atomic_attr *attr, uint64_t flags);
int rfi_atomicvalid(struct fid_ep *ep, enum fi_datatype datatype, enum fi_op op, size_t *count);
int rfi_fetch_atomicvalid(struct fid_ep *ep, enum fi_datatype datatype, enum fi_op op, size_t *count);
int rfi_compare_atomicvalid(struct fid_ep *ep, enum fi_datatype datatype, enum fi_op op, size_t *count);

ssize_t rfi_cq_read(struct fid_cq *cq, void *buf, size_t count);
ssize_t rfi_cq_readerr(struct fid_cq *cq, struct fi_cq_err_entry *buf, uint64_t flags);
const char *rfi_cq_strerror(struct fid_cq *cq, int prov_errno, const void *err_data, char *buf, size_t len);

uint64_t rfi_cntr_read(struct fid_cntr *cntr);
uint64_t rfi_cntr_readerr(struct fid_cntr *cntr);
int rfi_cntr_add(struct fid_cntr *cntr, uint64_t value);
int rfi_cntr_set(struct fid_cntr *cntr, uint64_t value);
int rfi_cntr_wait(struct fid_cntr *cntr, uint64_t threshold, int timeout);

ssize_t rfi_cancel(fid_t fid, void *context);

#endif
