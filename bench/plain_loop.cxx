// Reference for the payload benchmark: the plainest compiled ROOT event loop.
// Reads every branch of every entry with TTree::GetEntry and ROOT's default TTreeCache.
#include <TFile.h>
#include <TTree.h>
#include <chrono>
#include <cstdio>
#include <memory>

int main(int argc, char **argv) {
   if (argc < 3) {
      std::fprintf(stderr, "usage: plain_loop FILE TREE\n");
      return 2;
   }
   auto t0 = std::chrono::steady_clock::now();
   std::unique_ptr<TFile> f(TFile::Open(argv[1]));
   if (!f || f->IsZombie()) return 1;
   TTree *t = f->Get<TTree>(argv[2]);
   Long64_t bytes = 0, n = t->GetEntries();
   for (Long64_t i = 0; i < n; ++i) bytes += t->GetEntry(i);
   double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
   std::printf("{\"wall_s\": %.6f, \"events\": %lld, \"unzipped_bytes\": %lld, \"bytes_read\": %lld}\n", s, n, bytes, f->GetBytesRead());
   return 0;
}
