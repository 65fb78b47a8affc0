// The RNTuple write options both generators use (generate.cxx, generate_like.cxx): declared to
// cling before them (rootenv._NEEDS: cling has no include path to these sources).
#include <ROOT/RNTupleWriteOptions.hxx>
#include <Rtypes.h>
#include <algorithm>

namespace instore {

// Compression as asked, no implicit MT (a generator's file is the same whatever the machine),
// clusters of about cluster_bytes zipped (0: ROOT's default), pages up to page_bytes unzipped
// (0: ROOT's default).
inline ROOT::RNTupleWriteOptions rntuple_write_options(int compression, Long64_t cluster_bytes,
                                                       Long64_t page_bytes) {
   ROOT::RNTupleWriteOptions opts;
   opts.SetCompression(compression);
   opts.SetUseImplicitMT(ROOT::RNTupleWriteOptions::EImplicitMT::kOff);
   if (cluster_bytes > 0) {
      opts.SetApproxZippedClusterSize(cluster_bytes);
      opts.SetMaxUnzippedClusterSize(10 * cluster_bytes);
   }
   if (page_bytes > 0) {
      opts.SetInitialUnzippedPageSize(std::min<Long64_t>(256, page_bytes));
      opts.SetMaxUnzippedPageSize(page_bytes);
   }
   return opts;
}

}  // namespace instore
