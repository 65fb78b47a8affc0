// instore's template writer: a TTree with a real file's branches (names, leaf types, jagged
// collections with their counters), filled from column buffers that Python draws (numpy), so the
// schema is data, not code. The values come from instore.generate.values; this only lays them
// into baskets, as ROOT's own writer does for a NanoAOD.
#include <TFile.h>
#include <TTree.h>
#include <TBranch.h>
#include <TNamed.h>
#include <ROOT/RFieldBase.hxx>
#include <ROOT/RNTupleModel.hxx>
#include <ROOT/RNTupleWriteOptions.hxx>
#include <ROOT/RNTupleWriter.hxx>
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <exception>
#include <memory>
#include <string>
#include <vector>

namespace instore {

struct LikeWriter {
   std::unique_ptr<TFile> file;
   TTree *tree = nullptr;
   std::vector<int> counter;        // per branch: index of its counter branch, or -1
   std::vector<int> width;          // per branch: values per entry when not jagged (1: scalar)
   std::vector<int> esize;          // per branch: bytes per value
   std::vector<std::vector<char>> buffer;  // what the branch address points at
   std::string error;

   LikeWriter() {}  // not an aggregate: cppyy then calls this, not a member-wise initialiser
   LikeWriter(const LikeWriter &) = delete;

   // names, leaflists ("Jet_pt[nJet]/F"), counter index, fixed width, bytes per value, max
   // values per entry; cluster_bytes > 0: autoflush; 0: SetAutoFlush(0) and per-branch basket
   // sizes that differ (the unordered layout), as the study's own generator does.
   bool open(const char *path, const char *tree_name, int compression, Long64_t cluster_bytes,
             const std::vector<std::string> &names, const std::vector<std::string> &leaflists,
             const std::vector<int> &counters, const std::vector<int> &widths,
             const std::vector<int> &sizes, const std::vector<int> &max_values) {
      file.reset(TFile::Open(path, "RECREATE", "", compression));
      if (!file || file->IsZombie()) {
         error = std::string("cannot create ") + path;
         return false;
      }
      tree = new TTree(tree_name, "instore events like a template file");
      tree->SetAutoSave(0);
      if (cluster_bytes > 0) tree->SetAutoFlush(-cluster_bytes); else tree->SetAutoFlush(0);
      counter = counters;
      width = widths;
      esize = sizes;
      buffer.resize(names.size());
      for (size_t i = 0; i < names.size(); ++i) {
         buffer[i].assign(static_cast<size_t>(std::max(1, max_values[i])) * sizes[i] + 8, 0);
         int basket = cluster_bytes > 0 ? 32000 : 2000 * (1 + (static_cast<int>(i) * 7) % 16);
         if (!tree->Branch(names[i].c_str(), buffer[i].data(), leaflists[i].c_str(), basket)) {
            error = "cannot book branch " + names[i] + " as " + leaflists[i];
            return false;
         }
      }
      return true;
   }

   // Fill `n` entries from column buffers (one address per branch): a jagged branch's values are
   // flat and its counter's column says how many each entry takes.
   bool fill(Long64_t n, const std::vector<ULong64_t> &columns) {
      std::vector<Long64_t> cursor(columns.size(), 0);
      for (Long64_t e = 0; e < n; ++e) {
         for (size_t i = 0; i < columns.size(); ++i) {
            const char *src = reinterpret_cast<const char *>(columns[i]);
            Long64_t count = width[i];
            if (counter[i] >= 0) {
               // counters are stored as int32 or uint32 columns
               const char *c = reinterpret_cast<const char *>(columns[counter[i]]) + e * 4;
               std::int32_t k;
               std::memcpy(&k, c, 4);
               count = k;
            }
            const size_t bytes = static_cast<size_t>(count) * esize[i];
            if (bytes > buffer[i].size()) {
               error = "entry holds more values than booked for branch " + std::to_string(i);
               return false;
            }
            std::memcpy(buffer[i].data(), src + cursor[i] * esize[i], bytes);
            cursor[i] += count;
         }
         if (tree->Fill() < 0) {
            error = "TTree::Fill failed (is the disk full?)";
            return false;
         }
      }
      return true;
   }

   // Write the tree and the instore_meta record; returns the tree's compressed bytes or -1.
   Long64_t close(const char *meta_json) {
      if (!file) return -1;
      file->cd();
      if (tree->Write() <= 0) {
         error = "cannot write the tree (is the disk full?)";
         return -1;
      }
      TNamed meta("instore_meta", meta_json);
      meta.Write();
      Long64_t zip = tree->GetZipBytes();
      file->Close();
      file.reset();
      return zip;
   }
};

// The same columns as an RNTuple: one field per branch, named as the branch (collections as
// std::vector fields beside their counter, fixed arrays as std::array), as the study's own
// RNTuples are, so a read pattern names the same things in both formats. (ROOT's
// RNTupleImporter would group a collection's branches into an anonymous _collectionN record.)
struct JaggedField {
   virtual ~JaggedField() = default;
   virtual void assign(const char *p, size_t n) = 0;
   virtual void *ptr() = 0;
};

template <typename T>
struct JaggedOf : JaggedField {
   std::vector<T> values;
   void assign(const char *p, size_t n) override {
      const T *first = reinterpret_cast<const T *>(p);
      values.assign(first, first + n);
   }
   void *ptr() override { return &values; }
};

inline std::string cpp_type(char leaf) {
   switch (leaf) {
   case 'F': return "float";
   case 'D': return "double";
   case 'I': return "std::int32_t";
   case 'i': return "std::uint32_t";
   case 'L': return "std::int64_t";
   case 'l': return "std::uint64_t";
   case 'S': return "std::int16_t";
   case 's': return "std::uint16_t";
   case 'B': return "std::int8_t";
   case 'b': return "std::uint8_t";
   default: return "bool";
   }
}

inline std::unique_ptr<JaggedField> jagged_of(char leaf) {
   switch (leaf) {
   case 'F': return std::make_unique<JaggedOf<float>>();
   case 'D': return std::make_unique<JaggedOf<double>>();
   case 'I': return std::make_unique<JaggedOf<std::int32_t>>();
   case 'i': return std::make_unique<JaggedOf<std::uint32_t>>();
   case 'L': return std::make_unique<JaggedOf<std::int64_t>>();
   case 'l': return std::make_unique<JaggedOf<std::uint64_t>>();
   case 'S': return std::make_unique<JaggedOf<std::int16_t>>();
   case 's': return std::make_unique<JaggedOf<std::uint16_t>>();
   case 'B': return std::make_unique<JaggedOf<std::int8_t>>();
   case 'b': return std::make_unique<JaggedOf<std::uint8_t>>();
   default: return std::make_unique<JaggedOf<bool>>();
   }
}

struct LikeNTupleWriter {
   std::unique_ptr<TFile> file;
   std::unique_ptr<ROOT::RNTupleWriter> writer;
   std::unique_ptr<ROOT::REntry> entry;
   std::vector<int> counter, width, esize;
   std::vector<std::vector<char>> buffer;            // scalars and fixed arrays
   std::vector<std::unique_ptr<JaggedField>> jagged;  // collections (null for the others)
   std::string error;

   LikeNTupleWriter() {}
   LikeNTupleWriter(const LikeNTupleWriter &) = delete;

   // As LikeWriter::open, with leaf letters instead of leaflists; cluster_bytes/page_bytes 0:
   // ROOT's default RNTupleWriteOptions. `url` may carry ?reproducible=NAME.
   bool open(const char *url, const char *name, int compression, Long64_t cluster_bytes,
             Long64_t page_bytes, const std::vector<std::string> &names, const std::string &leaves,
             const std::vector<int> &counters, const std::vector<int> &widths,
             const std::vector<int> &sizes) {
      try {
         file.reset(TFile::Open(url, "RECREATE", "", compression));
         if (!file || file->IsZombie()) throw std::runtime_error(std::string("cannot create ") + url);
         counter = counters;
         width = widths;
         esize = sizes;
         auto model = ROOT::RNTupleModel::CreateBare();
         for (size_t i = 0; i < names.size(); ++i) {
            std::string type = cpp_type(leaves[i]);
            if (counters[i] >= 0) type = "std::vector<" + type + ">";
            else if (widths[i] > 1) type = "std::array<" + type + "," + std::to_string(widths[i]) + ">";
            model->AddField(ROOT::RFieldBase::Create(names[i], type).Unwrap());
         }
         auto opts = rntuple_write_options(compression, cluster_bytes, page_bytes);
         writer = ROOT::RNTupleWriter::Append(std::move(model), name, *file, opts);
         entry = writer->CreateEntry();
         buffer.resize(names.size());
         jagged.resize(names.size());
         for (size_t i = 0; i < names.size(); ++i) {
            if (counters[i] >= 0) {
               jagged[i] = jagged_of(leaves[i]);
               entry->BindRawPtr(names[i], jagged[i]->ptr());
            } else {
               buffer[i].assign(static_cast<size_t>(widths[i]) * sizes[i] + 8, 0);
               entry->BindRawPtr(names[i], static_cast<void *>(buffer[i].data()));
            }
         }
         return true;
      } catch (const std::exception &e) {
         error = e.what();
         return false;
      }
   }

   bool fill(Long64_t n, const std::vector<ULong64_t> &columns) {
      try {
         std::vector<Long64_t> cursor(columns.size(), 0);
         for (Long64_t e = 0; e < n; ++e) {
            for (size_t i = 0; i < columns.size(); ++i) {
               const char *src = reinterpret_cast<const char *>(columns[i]);
               if (counter[i] >= 0) {
                  std::int32_t k;
                  std::memcpy(&k, reinterpret_cast<const char *>(columns[counter[i]]) + e * 4, 4);
                  jagged[i]->assign(src + cursor[i] * esize[i], k);
                  cursor[i] += k;
               } else {
                  std::memcpy(buffer[i].data(), src + cursor[i] * esize[i], width[i] * esize[i]);
                  cursor[i] += width[i];
               }
            }
            writer->Fill(*entry);
         }
         return true;
      } catch (const std::exception &e) {
         error = e.what();
         return false;
      }
   }

   Long64_t close(const char *meta_json) {
      try {
         writer->CommitDataset();
         Long64_t n = writer->GetNEntries();
         entry.reset();
         writer.reset();
         file->cd();
         TNamed meta("instore_meta", meta_json);
         meta.Write();
         file->Close();
         file.reset();
         return n;
      } catch (const std::exception &e) {
         error = e.what();
         return -1;
      }
   }
};

// Re-write a tree with every basket recompressed as its own key (CloneTree, not fast): how the
// template's bytes per branch are measured when its baskets sit inside the tree's record.
inline Long64_t rewrite(const char *src, const char *tree_name, const char *dst, int compression) {
   std::unique_ptr<TFile> in(TFile::Open(src, "READ"));
   if (!in || in->IsZombie()) return -1;
   auto *t = in->Get<TTree>(tree_name);
   if (!t) return -2;
   std::unique_ptr<TFile> out(TFile::Open(dst, "RECREATE", "", compression));
   if (!out || out->IsZombie()) return -3;
   TTree *c = t->CloneTree(-1, "");
   if (!c) return -4;
   c->Write();
   Long64_t n = c->GetEntries();
   out->Close();
   return n;
}

}  // namespace instore
