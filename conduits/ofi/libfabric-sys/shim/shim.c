/* See shim.h: each function forwards to the static inline call of the
 * same name in libfabric's headers. */
#include "shim.h"

const uint64_t rfi_addr_unspec = FI_ADDR_UNSPEC;
const uint64_t rfi_addr_notavail = FI_ADDR_NOTAVAIL;
const uint64_t rfi_key_notavail = FI_KEY_NOTAVAIL;
const uint32_t rfi_header_version = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);

uint32_t rfi_version(uint32_t major, uint32_t minor) { return FI_VERSION(major, minor); }
struct fi_info *rfi_allocinfo(void) { return fi_allocinfo(); }

int rfi_close(struct fid *fid) { return fi_close(fid); }
int rfi_domain(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **domain, void *context)
{ return fi_domain(fabric, info, domain, context); }
int rfi_endpoint(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep, void *context)
{ return fi_endpoint(domain, info, ep, context); }
int rfi_av_open(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **av, void *context)
{ return fi_av_open(domain, attr, av, context); }
int rfi_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **cq, void *context)
{ return fi_cq_open(domain, attr, cq, context); }
int rfi_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr, struct fid_cntr **cntr, void *context)
{ return fi_cntr_open(domain, attr, cntr, context); }
int rfi_mr_reg(struct fid_domain *domain, const void *buf, size_t len, uint64_t acs, uint64_t offset,
               uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context)
{ return fi_mr_reg(domain, buf, len, acs, offset, requested_key, flags, mr, context); }
int rfi_mr_bind(struct fid_mr *mr, struct fid *bfid, uint64_t flags) { return fi_mr_bind(mr, bfid, flags); }
int rfi_mr_enable(struct fid_mr *mr) { return fi_mr_enable(mr); }
uint64_t rfi_mr_key(struct fid_mr *mr) { return fi_mr_key(mr); }
void *rfi_mr_desc(struct fid_mr *mr) { return fi_mr_desc(mr); }
int rfi_ep_bind(struct fid_ep *ep, struct fid *bfid, uint64_t flags) { return fi_ep_bind(ep, bfid, flags); }
int rfi_enable(struct fid_ep *ep) { return fi_enable(ep); }
int rfi_getname(fid_t fid, void *addr, size_t *addrlen) { return fi_getname(fid, addr, addrlen); }
int rfi_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen)
{ return fi_setopt(fid, level, optname, optval, optlen); }
int rfi_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{ return fi_getopt(fid, level, optname, optval, optlen); }
int rfi_av_insert(struct fid_av *av, const void *addr, size_t count, fi_addr_t *fi_addr, uint64_t flags,
                  void *context)
{ return fi_av_insert(av, addr, count, fi_addr, flags, context); }
const char *rfi_av_straddr(struct fid_av *av, const void *addr, char *buf, size_t *len)
{ return fi_av_straddr(av, addr, buf, len); }

ssize_t rfi_send(struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t dest_addr, void *context)
{ return fi_send(ep, buf, len, desc, dest_addr, context); }
ssize_t rfi_sendmsg(struct fid_ep *ep, const struct fi_msg *msg, uint64_t flags)
{ return fi_sendmsg(ep, msg, flags); }
ssize_t rfi_senddata(struct fid_ep *ep, const void *buf, size_t len, void *desc, uint64_t data,
                     fi_addr_t dest_addr, void *context)
{ return fi_senddata(ep, buf, len, desc, data, dest_addr, context); }
ssize_t rfi_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest_addr)
{ return fi_inject(ep, buf, len, dest_addr); }
ssize_t rfi_recv(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src_addr, void *context)
{ return fi_recv(ep, buf, len, desc, src_addr, context); }
ssize_t rfi_recvmsg(struct fid_ep *ep, const struct fi_msg *msg, uint64_t flags)
{ return fi_recvmsg(ep, msg, flags); }

ssize_t rfi_write(struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t dest_addr, uint64_t addr,
                  uint64_t key, void *context)
{ return fi_write(ep, buf, len, desc, dest_addr, addr, key, context); }
ssize_t rfi_writemsg(struct fid_ep *ep, const struct fi_msg_rma *msg, uint64_t flags)
{ return fi_writemsg(ep, msg, flags); }
ssize_t rfi_read(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src_addr, uint64_t addr,
                 uint64_t key, void *context)
{ return fi_read(ep, buf, len, desc, src_addr, addr, key, context); }
ssize_t rfi_readmsg(struct fid_ep *ep, const struct fi_msg_rma *msg, uint64_t flags)
{ return fi_readmsg(ep, msg, flags); }

ssize_t rfi_atomic(struct fid_ep *ep, const void *buf, size_t count, void *desc, fi_addr_t dest_addr,
                   uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op, void *context)
{ return fi_atomic(ep, buf, count, desc, dest_addr, addr, key, datatype, op, context); }
ssize_t rfi_fetch_atomic(struct fid_ep *ep, const void *buf, size_t count, void *desc, void *result,
                         void *result_desc, fi_addr_t dest_addr, uint64_t addr, uint64_t key,
                         enum fi_datatype datatype, enum fi_op op, void *context)
{ return fi_fetch_atomic(ep, buf, count, desc, result, result_desc, dest_addr, addr, key, datatype, op, context); }
ssize_t rfi_compare_atomic(struct fid_ep *ep, const void *buf, size_t count, void *desc, const void *compare,
                           void *compare_desc, void *result, void *result_desc, fi_addr_t dest_addr,
                           uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op,
                           void *context)
{
	return fi_compare_atomic(ep, buf, count, desc, compare, compare_desc, result, result_desc, dest_addr, addr,
	                         key, datatype, op, context);
}
ssize_t rfi_atomicmsg(struct fid_ep *ep, const struct fi_msg_atomic *msg, uint64_t flags)
{ return fi_atomicmsg(ep, msg, flags); }
int rfi_query_atomic(struct fid_domain *domain, enum fi_datatype datatype, enum fi_op op,
                     struct fi_atomic_attr *attr, uint64_t flags)
{ return fi_query_atomic(domain, datatype, op, attr, flags); }
int rfi_atomicvalid(struct fid_ep *ep, enum fi_datatype datatype, enum fi_op op, size_t *count)
{ return fi_atomicvalid(ep, datatype, op, count); }
int rfi_fetch_atomicvalid(struct fid_ep *ep, enum fi_datatype datatype, enum fi_op op, size_t *count)
{ return fi_fetch_atomicvalid(ep, datatype, op, count); }
int rfi_compare_atomicvalid(struct fid_ep *ep, enum fi_datatype datatype, enum fi_op op, size_t *count)
{ return fi_compare_atomicvalid(ep, datatype, op, count); }

ssize_t rfi_cq_read(struct fid_cq *cq, void *buf, size_t count) { return fi_cq_read(cq, buf, count); }
ssize_t rfi_cq_readerr(struct fid_cq *cq, struct fi_cq_err_entry *buf, uint64_t flags)
{ return fi_cq_readerr(cq, buf, flags); }
const char *rfi_cq_strerror(struct fid_cq *cq, int prov_errno, const void *err_data, char *buf, size_t len)
{ return fi_cq_strerror(cq, prov_errno, err_data, buf, len); }

uint64_t rfi_cntr_read(struct fid_cntr *cntr) { return fi_cntr_read(cntr); }
uint64_t rfi_cntr_readerr(struct fid_cntr *cntr) { return fi_cntr_readerr(cntr); }
int rfi_cntr_add(struct fid_cntr *cntr, uint64_t value) { return fi_cntr_add(cntr, value); }
int rfi_cntr_set(struct fid_cntr *cntr, uint64_t value) { return fi_cntr_set(cntr, value); }
int rfi_cntr_wait(struct fid_cntr *cntr, uint64_t threshold, int timeout)
{ return fi_cntr_wait(cntr, threshold, timeout); }

ssize_t rfi_cancel(fid_t fid, void *context) { return fi_cancel(fid, context); }
