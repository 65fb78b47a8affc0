// instore measuring payload, ROOT engine: a C++ event loop with TTreePerfStats attached.
#include <TBasket.h>
#include <TBranch.h>
#include <TDirectory.h>
#include <TKey.h>
#include <TObjArray.h>
#include <TEnv.h>
#include <TFile.h>
#include <TSystem.h>
#include <cstdlib>
#include <TFileCacheRead.h>
#include <TMemFile.h>
#include <TTree.h>
#include <TTreeCache.h>
#include <TTreePerfStats.h>
#include <TVirtualPerfStats.h>
#include <ctime>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace instore {

// TTreePerfStats that also keeps each physical read (offset, length): the read-size
// histogram and the access map come from the reads ROOT really issued. The offset is the one
// TTreePerfStats itself plots (GetRelOffset at the read event): the start of the read for
// local files.
class ReadLog : public TTreePerfStats {
public:
   std::vector<Long64_t> offsets;
   std::vector<Long64_t> lengths;
   ReadLog(const char *name, TTree *t) : TTreePerfStats(name, t) {}
   void FileReadEvent(TFile *file, Int_t len, Double_t start) override {
      offsets.push_back(file->GetRelOffset());
      lengths.push_back(len);
      TTreePerfStats::FileReadEvent(file, len, start);
   }
};

// A TTreeCache that counts its fills: each fill is one batched request to storage (a vector
// read on root://, a multi-range request on http://, coalesced preads on a local file).
class CountingCache : public TTreeCache {
public:
   Long64_t fills = 0;
   CountingCache(TTree *t, Int_t size) : TTreeCache(t, size) {}
   bool FillBuffer() override {
      bool filled = TTreeCache::FillBuffer();
      if (filled) ++fills;
      return filled;
   }
};

// The auto-cache factor: rootrc TTreeCache.Size, overridden by ROOT_TTREECACHE_SIZE.
// 0 means TTree::GetEntry creates no cache by itself (ROOT 5 behaviour).
inline double auto_cache_factor() {
   double factor = gEnv->GetValue("TTreeCache.Size", 1.0);
   if (const char *env = gSystem->Getenv("ROOT_TTREECACHE_SIZE")) factor = std::atof(env);
   return factor;
}

// Size of the cache TTree::GetEntry would create by itself.
inline Long64_t default_cache_size(TTree *t) {
   if (auto_cache_factor() <= 0 || !t->EnableCache()) return 0;
   TFileCacheRead *c = t->GetCurrentFile()->GetCacheRead(t);
   return c ? c->GetBufferSize() : 0;
}

struct LoopResult {
   Long64_t events = 0;
   Long64_t cache_size = 0;
   Long64_t cache_fills = 0;
   Long64_t unzipped_bytes = 0;
   std::string error;
};

// Turn on the sub-branches of a split branch too: SetBranchStatus matches names, and a split
// class's members are named without their branch's (e.g. "smk", not "TrigDecisionAux.smk").
inline void enable_sub_branches(TBranch *b) {
   TObjArray *subs = b->GetListOfBranches();
   for (Int_t k = 0; k < subs->GetEntriesFast(); ++k) {
      auto *sub = static_cast<TBranch *>(subs->UncheckedAt(k));
      sub->ResetBit(kDoNotProcess);
      enable_sub_branches(sub);
   }
}

// Read `names` for entries first, first+stride, ... < stop, as an analysis would.
// cache_bytes < 0 asks for ROOT's default TTreeCache (what TTree::GetEntry would create:
// the autoflush cluster size, scaled by ROOT_TTREECACHE_SIZE / TTreeCache.Size); 0 turns it off.
inline LoopResult loop(TTree *t, const std::vector<std::string> &names, Long64_t first, Long64_t stop,
                       Long64_t stride, double cpu_us, Long64_t cache_bytes) {
   LoopResult r;
   t->SetBranchStatus("*", false);
   for (auto &n : names) {
      TBranch *b = t->GetBranch(n.c_str());
      if (!b) {
         r.error = "no branch named " + n;
         return r;
      }
      t->SetBranchStatus(n.c_str(), true);
      enable_sub_branches(b);
   }
   TFile *f = t->GetCurrentFile();
   Long64_t size = cache_bytes < 0 ? default_cache_size(t) : cache_bytes;
   t->SetCacheSize(0);
   CountingCache *cache = nullptr;
   if (size > 0) {
      cache = new CountingCache(t, static_cast<Int_t>(size));
      f->SetCacheRead(cache, t);
      for (auto &n : names) t->AddBranchToCache(n.c_str(), true);
      // learning stopped before the range is set: the other way round, a range that starts
      // after entry 0 (a thread's clusters) never fills the cache (seen with ROOT 6.40); from
      // entry 0 both orders read alike
      t->StopCacheLearningPhase();
      t->SetCacheEntryRange(first, stop);
   }
   // TTree::GetEntry (not TBranch::GetEntry): it sets the tree's read entry, which the
   // TTreeCache uses to decide what to prefetch; inactive branches are skipped.
   for (Long64_t e = first; e < stop; e += stride) {
      Int_t n = t->GetEntry(e);
      if (n <= 0) {
         r.error = "read error at entry " + std::to_string(e) + " (GetEntry returned " + std::to_string(n) + ")";
         return r;
      }
      r.unzipped_bytes += n;
      burn(cpu_us);
      ++r.events;
   }
   if (cache) {
      r.cache_size = cache->GetBufferSize();
      r.cache_fills = cache->fills;
   }
   return r;
}

// The clusters' first entries and the last one's end: where a multi-threaded job may split.
inline std::vector<Long64_t> cluster_bounds(TTree *t) {
   std::vector<Long64_t> bounds;
   auto it = t->GetClusterIterator(0);
   for (Long64_t start = it(); start < t->GetEntries(); start = it()) bounds.push_back(start);
   bounds.push_back(t->GetEntries());
   return bounds;
}

// `loop` on each tree in a thread of its own, over its entries [firsts[k], stops[k]): the
// entries split by cluster, each thread with its own file, tree and TTreeCache, as
// ROOT::TTreeProcessorMT does. Each thread's reads go to its own ReadLog (gPerfStats is per
// thread). ROOT::EnableThreadSafety() must have been called.
inline std::vector<LoopResult> parallel_loop(const std::vector<TTree *> &trees,
                                             const std::vector<ReadLog *> &logs,
                                             const std::vector<std::string> &names,
                                             const std::vector<Long64_t> &firsts,
                                             const std::vector<Long64_t> &stops, Long64_t stride,
                                             double cpu_us, Long64_t cache_bytes) {
   std::vector<LoopResult> results(trees.size());
   std::vector<std::thread> threads;
   for (size_t k = 0; k < trees.size(); ++k)
      threads.emplace_back([&, k] {
         gPerfStats = logs[k];
         results[k] = loop(trees[k], names, firsts[k], stops[k], stride, cpu_us, cache_bytes);
         gPerfStats = nullptr;
      });
   for (auto &t : threads) t.join();
   return results;
}

// The basket map from ROOT's view of the metadata: one entry per basket of each named branch and
// of its sub-branches (a split class's members), in its own key on disk or embedded in the
// TTree's record (TBranch::fBaskets from the slot fWriteBasket on: the baskets ROOT had not
// written yet when it wrote the tree). An embedded basket's bytes are those of the TTree's key,
// the only way to fetch them (see instore.payload.maps).
struct BasketRows {
   std::vector<int> branch;
   std::vector<int> basket;
   std::vector<Long64_t> entry_start, entry_stop, offset, bytes;
   std::vector<int> embedded;  // 1: stored in the TTree's record
};

// (offset, bytes on storage) of the key the tree was read from; (0, 0) for a tree in no file.
inline std::pair<Long64_t, Long64_t> tree_key(TTree *t) {
   TDirectory *dir = t->GetDirectory();
   TKey *key = dir ? dir->GetKey(t->GetName()) : nullptr;
   return key ? std::make_pair(key->GetSeekKey(), static_cast<Long64_t>(key->GetNbytes()))
              : std::make_pair(Long64_t(0), Long64_t(0));
}

inline BasketRows basket_rows(TTree *t, const std::vector<std::string> &names) {
   BasketRows r;
   auto key = tree_key(t);
   auto add = [&r](int i, int k, Long64_t start, Long64_t stop, Long64_t offset, Long64_t bytes,
                   bool embedded) {
      r.branch.push_back(i);
      r.basket.push_back(k);
      r.entry_start.push_back(start);
      r.entry_stop.push_back(stop);
      r.offset.push_back(offset);
      r.bytes.push_back(bytes);
      r.embedded.push_back(embedded);
   };
   std::vector<std::pair<int, TBranch *>> branches;  // each top-level branch, then its sub-branches
   for (size_t i = 0; i < names.size(); ++i) {
      TBranch *top = t->GetBranch(names[i].c_str());
      if (!top) continue;
      std::vector<TBranch *> todo{top};
      while (!todo.empty()) {
         TBranch *b = todo.back();
         todo.pop_back();
         branches.emplace_back(static_cast<int>(i), b);
         TObjArray *subs = b->GetListOfBranches();
         for (Int_t k = subs->GetEntriesFast() - 1; k >= 0; --k)
            todo.push_back(static_cast<TBranch *>(subs->UncheckedAt(k)));
      }
   }
   for (auto [i, b] : branches) {
      Int_t n = b->GetWriteBasket();
      for (Int_t k = 0; k < n; ++k)
         add(i, k, b->GetBasketEntry()[k], b->GetBasketEntry()[k + 1], b->GetBasketSeek(k),
             b->GetBasketBytes()[k], false);
      Long64_t start = n > 0 ? b->GetBasketEntry()[n] : 0;
      TObjArray *held = b->GetListOfBaskets();
      Int_t next = n;
      for (Int_t k = n; k < held->GetEntriesFast(); ++k) {
         auto *basket = static_cast<TBasket *>(held->UncheckedAt(k));
         if (!basket || basket->GetNevBuf() <= 0) continue;
         Long64_t stop = start + basket->GetNevBuf();
         add(i, next++, start, stop, key.first, key.second, true);
         start = stop;
      }
   }
   return r;
}

// A tiny tree in memory (one scalar, one jagged branch, a few baskets): running the engine on
// it before the clock starts makes cling compile every code path the measurement will use.
inline TTree *warm_up_tree(TMemFile &f) {
   f.cd();
   auto *t = new TTree("warmup", "instore warm-up");
   int n = 0;
   float x[8] = {0};
   t->Branch("n", &n, "n/I", 1000);
   t->Branch("x", x, "x[n]/F", 1000);
   for (int i = 0; i < 500; ++i) {
      n = i % 8;
      for (int k = 0; k < n; ++k) x[k] = i + k;
      t->Fill();
   }
   t->Write();
   return t;
}

}  // namespace instore
