// instore measuring payload, ROOT engine for RNTuple: RNTupleReader with type-erased views on
// the selected top-level fields, metrics on, the cluster cache on or off.
#include <ROOT/RNTuple.hxx>
#include <ROOT/RNTupleDescriptor.hxx>
#include <ROOT/RNTupleMetrics.hxx>
#include <ROOT/RNTupleModel.hxx>
#include <ROOT/RNTupleReadOptions.hxx>
#include <ROOT/RNTupleReader.hxx>
#include <ROOT/RNTupleView.hxx>
#include <ROOT/RNTupleWriteOptions.hxx>
#include <ROOT/RNTupleWriter.hxx>
#include <TFile.h>
#include <ctime>
#include <exception>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace instore {

constexpr Long64_t kChecksumBytes = 8;

// The page map from ROOT's descriptor: one row per page on disk of the given top-level fields.
struct PageRows {
   std::vector<int> field, page;
   std::vector<Long64_t> entry_start, entry_stop, offset, bytes;
};

// One read of one RNTuple. `cluster_cache`: 1 on, 0 off, -1 RNTuple's default.
class NtupleJob {
public:
   std::unique_ptr<ROOT::RNTupleReader> reader;
   std::string error;

   NtupleJob(TFile *f, const std::string &path, int cluster_cache) {
      try {
         auto *anchor = f->Get<ROOT::RNTuple>(path.c_str());
         if (!anchor) {
            error = "no RNTuple at " + path;
            return;
         }
         ROOT::RNTupleReadOptions opts;
         opts.SetEnableMetrics(true);
         using CC = ROOT::RNTupleReadOptions::EClusterCache;
         if (cluster_cache >= 0) opts.SetClusterCache(cluster_cache ? CC::kOn : CC::kOff);
         reader = ROOT::RNTupleReader::Open(*anchor, opts);
         delete anchor;
      } catch (const std::exception &e) {
         error = e.what();
      }
   }

   bool cluster_cache_on(int requested) const {
      using CC = ROOT::RNTupleReadOptions::EClusterCache;
      if (requested >= 0) return requested > 0;
      return ROOT::RNTupleReadOptions().GetClusterCache() != CC::kOff;
   }

   Long64_t entries() const { return reader ? reader->GetNEntries() : 0; }

   std::vector<std::string> fields() {
      std::vector<std::string> names;
      const auto &desc = reader->GetDescriptor();
      for (const auto &fd : desc.GetTopLevelFields()) names.push_back(fd.GetFieldName());
      return names;
   }

   // Read `names` for entries first, first+stride, ... < stop; return the events read.
   Long64_t loop(const std::vector<std::string> &names, Long64_t first, Long64_t stop, Long64_t stride,
                 double cpu_us) {
      Long64_t events = 0;
      try {
         std::vector<ROOT::RNTupleView<void>> views;
         for (auto &n : names) views.emplace_back(reader->GetView<void>(n));
         for (Long64_t e = first; e < stop; e += stride) {
            for (auto &v : views) v(e);
            burn(cpu_us);
            ++events;
         }
      } catch (const std::exception &e) {
         error = "read error after " + std::to_string(events) + " entries: " + e.what();
      }
      return events;
   }

   // A page source counter ("nRead", "szReadPayload", ...); -1 when ROOT has no such counter.
   Long64_t counter(const std::string &name) const {
      const auto *c = reader->GetMetrics().GetCounter("RNTupleReader.RPageSourceFile." + name);
      return c ? c->GetValueAsInt() : -1;
   }

   PageRows page_rows(const std::vector<std::string> &names) {
      PageRows r;
      const auto &desc = reader->GetDescriptor();
      for (size_t i = 0; i < names.size(); ++i) {
         std::set<ROOT::DescriptorId_t> columns;
         add_columns(desc, desc.FindFieldId(names[i]), columns);
         for (const auto &cluster : desc.GetClusterIterable()) {
            Long64_t start = cluster.GetFirstEntryIndex();
            Long64_t stop = start + cluster.GetNEntries();
            for (auto col : columns) {
               if (!cluster.ContainsColumn(col) || cluster.GetColumnRange(col).IsSuppressed()) continue;
               const auto &range = cluster.GetPageRange(col);
               int k = 0;
               for (const auto &info : range.GetPageInfos()) {
                  const auto &loc = info.GetLocator();
                  r.field.push_back(static_cast<int>(i));
                  r.page.push_back(k++);
                  r.entry_start.push_back(start);
                  r.entry_stop.push_back(stop);
                  r.offset.push_back(static_cast<Long64_t>(loc.GetPosition<std::uint64_t>()));
                  // a checksummed page is read with its 8-byte xxhash3 checksum behind it
                  r.bytes.push_back(static_cast<Long64_t>(loc.GetNBytesOnStorage()) +
                                    (info.HasChecksum() ? kChecksumBytes : 0));
               }
            }
         }
      }
      return r;
   }

private:
   // The physical columns of a field and of all its subfields.
   static void add_columns(const ROOT::RNTupleDescriptor &desc, ROOT::DescriptorId_t id,
                           std::set<ROOT::DescriptorId_t> &out) {
      const auto &fd = desc.GetFieldDescriptor(id);
      for (auto c : fd.GetLogicalColumnIds()) out.insert(desc.GetColumnDescriptor(c).GetPhysicalId());
      for (auto child : fd.GetLinkIds()) add_columns(desc, child, out);
   }
};

// A tiny RNTuple (a scalar and a vector field, a few clusters) to run the engine on before the
// clock starts, so cling compiles every code path the measurement uses.
inline void write_warm_up_ntuple(const std::string &path) {
   auto model = ROOT::RNTupleModel::Create();
   auto x = model->MakeField<float>("x");
   auto v = model->MakeField<std::vector<float>>("v");
   ROOT::RNTupleWriteOptions opts;
   opts.SetApproxZippedClusterSize(4096);
   auto writer = ROOT::RNTupleWriter::Recreate(std::move(model), "warmup", path, opts);
   for (int i = 0; i < 2000; ++i) {
      *x = i;
      v->assign(i % 5, i * 0.5f);
      writer->Fill();
   }
}

}  // namespace instore
