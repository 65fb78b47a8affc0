// instore measuring payload, ROOT engine for RNTuple: RNTupleReader with type-erased views on
// the selected top-level fields (or on what they are made of, where ROOT cannot build their
// type here), metrics on, the cluster cache on or off.
#include <ROOT/RField.hxx>
#include <ROOT/RNTuple.hxx>
#include <ROOT/RNTupleDescriptor.hxx>
#include <ROOT/RNTupleMetrics.hxx>
#include <ROOT/RNTupleModel.hxx>
#include <ROOT/RNTupleReadOptions.hxx>
#include <ROOT/RNTupleReader.hxx>
#include <ROOT/RNTupleView.hxx>
#include <ROOT/RNTupleWriteOptions.hxx>
#include <ROOT/RNTupleWriter.hxx>
#include <TClass.h>
#include <TFile.h>
#include <ctime>
#include <exception>
#include <memory>
#include <set>
#include <string>
#include <thread>
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

   // The chosen top-level fields this process can read, after `prepare`. A field whose type ROOT
   // cannot build here (a class without a dictionary, or a type known only by its alias, as ATLAS
   // writes `SG::sgkey_t`) is read through its structure as stored: a record's members, a
   // collection's offsets then its items' members by element, an empty record (a base class with
   // no data members) not at all; a field nothing of which can be read is skipped, and
   // `skip_reason` names the first class that made it so.
   std::vector<std::string> readable, skipped;
   std::string skip_reason;

   // Make the readers of `names`; returns `readable`.
   std::vector<std::string> prepare(const std::vector<std::string> &names) {
      top = Node{};
      readable.clear();
      skipped.clear();
      skip_reason.clear();
      const auto &desc = reader->GetDescriptor();
      for (auto &n : names) {
         Node mine;
         std::string why;
         if (add_field(desc, desc.FindFieldId(n), mine, why)) {
            top.adopt(std::move(mine));
            readable.push_back(n);
         } else {
            skipped.push_back(n);
            if (skip_reason.empty()) skip_reason = "field " + n + ": " + why;
         }
      }
      return readable;
   }

   // Read the prepared fields for entries first, first+stride, ... < stop; return the events read.
   Long64_t loop(Long64_t first, Long64_t stop, Long64_t stride, double cpu_us) {
      Long64_t events = 0;
      try {
         for (Long64_t e = first; e < stop; e += stride) {
            top.read(static_cast<ROOT::NTupleSize_t>(e));
            burn(cpu_us);
            ++events;
         }
      } catch (const std::exception &e) {
         error = "read error after " + std::to_string(events) + " entries: " + e.what();
      }
      return events;
   }

   // The clusters' first entries, in order, and the last one's end: where threads may split.
   std::vector<Long64_t> cluster_bounds() const {
      std::set<Long64_t> starts;
      for (const auto &cluster : reader->GetDescriptor().GetClusterIterable())
         starts.insert(static_cast<Long64_t>(cluster.GetFirstEntryIndex()));
      std::vector<Long64_t> bounds(starts.begin(), starts.end());
      bounds.push_back(entries());
      return bounds;
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
                  // a deferred column's pages before its first element (a field added to the model
                  // after the first entries, as ATLAS's dynamic aux fields are) are "page zero":
                  // ROOT makes them up from nothing, there are no bytes on storage to list
                  if (loc.GetType() != ROOT::RNTupleLocator::kTypeFile) continue;
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
   // What reads one field at one index: views of what ROOT can build whole, and collections whose
   // items it cannot, each with the node that reads one item (indexed by element, not by entry).
   struct Node {
      std::vector<ROOT::RNTupleView<void>> views;
      std::vector<ROOT::RNTupleCollectionView> collections;
      std::vector<Node> items;
      std::vector<std::shared_ptr<void>> buffers;  // values of views read as their stored type

      void adopt(Node &&other) {
         for (auto &v : other.views) views.emplace_back(std::move(v));
         for (auto &c : other.collections) collections.emplace_back(std::move(c));
         for (auto &i : other.items) items.emplace_back(std::move(i));
         for (auto &b : other.buffers) buffers.emplace_back(std::move(b));
      }

      template <typename Index>
      void read(Index index) {
         for (auto &v : views) v(index);
         for (size_t k = 0; k < collections.size(); ++k)
            for (auto element : collections[k].GetCollectionRange(index)) items[k].read(element);
      }
   };
   Node top;

   // Add to `out` what reads field `id` whole: its own view; or, where ROOT cannot build its type
   // here, a view as its stored type (an alias ROOT does not know), its members (a record), its
   // offsets and items (a collection), or nothing (a record with no members). False, with `why`,
   // when none of these reads it.
   bool add_field(const ROOT::RNTupleDescriptor &desc, ROOT::DescriptorId_t id, Node &out,
                  std::string &why) {
      const auto &fd = desc.GetFieldDescriptor(id);
      std::string message;
      try {
         out.views.emplace_back(reader->GetView<void>(id));
         return true;
      } catch (const std::exception &e) {
         message = e.what();
      }
      if (!fd.GetTypeAlias().empty() && as_stored_type(fd, id, out)) return true;
      const auto structure = fd.GetStructure();
      if (structure == ROOT::ENTupleStructure::kRecord) {
         Node members;
         for (auto child : fd.GetLinkIds())
            if (!add_field(desc, child, members, why)) return false;
         out.adopt(std::move(members));  // no members: an empty base class, nothing stored
         return true;
      }
      if (structure == ROOT::ENTupleStructure::kCollection && fd.GetLinkIds().size() == 1) {
         Node item;
         if (!add_field(desc, fd.GetLinkIds()[0], item, why)) return false;
         out.collections.emplace_back(reader->GetCollectionView(id));
         out.items.emplace_back(std::move(item));
         return true;
      }
      why = describe(desc, id, message);
      return false;
   }

   // A view of a field declared by an alias ROOT does not know (`SG::sgkey_t`), read as the type
   // the alias stands for, which the descriptor stores too (`std::uint32_t`).
   bool as_stored_type(const ROOT::RFieldDescriptor &fd, ROOT::DescriptorId_t id, Node &out) {
      try {
         auto field = ROOT::RFieldBase::Create("stored", fd.GetTypeName()).Unwrap();
         auto buffer = field->CreateValue().GetPtr<void>();  // owns the memory, deleter included
         out.views.emplace_back(reader->GetView(id, buffer.get(), fd.GetTypeName()));
         out.buffers.emplace_back(std::move(buffer));
         return true;
      } catch (const std::exception &) {
         return false;
      }
   }

   // Why field `id` cannot be read: the first class in it that has no dictionary in this process,
   // else ROOT's own message (its first line).
   static std::string describe(const ROOT::RNTupleDescriptor &desc, ROOT::DescriptorId_t id,
                               const std::string &message) {
      std::vector<ROOT::DescriptorId_t> todo{id};
      while (!todo.empty()) {
         const auto &fd = desc.GetFieldDescriptor(todo.front());
         todo.erase(todo.begin());
         if (fd.GetStructure() == ROOT::ENTupleStructure::kRecord && !fd.GetTypeName().empty()) {
            TClass *cl = TClass::GetClass(fd.GetTypeName().c_str(), true, true);
            if (!cl || !cl->HasDictionary()) return "no dictionary for class " + fd.GetTypeName();
         }
         for (auto child : fd.GetLinkIds()) todo.push_back(child);
      }
      return message.substr(0, message.find('\n'));
   }

   // The physical columns of a field and of all its subfields.
   static void add_columns(const ROOT::RNTupleDescriptor &desc, ROOT::DescriptorId_t id,
                           std::set<ROOT::DescriptorId_t> &out) {
      const auto &fd = desc.GetFieldDescriptor(id);
      for (auto c : fd.GetLogicalColumnIds()) out.insert(desc.GetColumnDescriptor(c).GetPhysicalId());
      for (auto child : fd.GetLinkIds()) add_columns(desc, child, out);
   }
};

// Each job's `loop` in a thread of its own, over its entries [firsts[k], stops[k]): the entries
// split by cluster, each thread with its own reader (page source, cluster cache), as RDataFrame
// reads an RNTuple on several threads. Returns the events each thread read.
inline std::vector<Long64_t> parallel_ntuple_loop(const std::vector<NtupleJob *> &jobs,
                                           const std::vector<Long64_t> &firsts,
                                           const std::vector<Long64_t> &stops, Long64_t stride,
                                           double cpu_us) {
   std::vector<Long64_t> events(jobs.size(), 0);
   std::vector<std::thread> threads;
   for (size_t k = 0; k < jobs.size(); ++k)
      threads.emplace_back([&, k] { events[k] = jobs[k]->loop(firsts[k], stops[k], stride, cpu_us); });
   for (auto &t : threads) t.join();
   return events;
}

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
