// Reference for the replay-client benchmark: XRootD's C++ client alone, no Python, no instore.
// REQUESTS sequential requests over URL, each of CHUNKS contiguous chunks of CHUNK bytes (a
// plain read when CHUNKS is 1, a vector read otherwise) into one reused buffer, sleeping PACE_S
// seconds before each: the floor any XrdCl-based replayer pays on this machine.
// Prints its CPU seconds (every thread of the process) and wall seconds.
#include <XrdCl/XrdClFile.hh>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

static double cpu_s() {
   rusage u;
   getrusage(RUSAGE_SELF, &u);
   return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

static XrdCl::XRootDStatus request(XrdCl::File &file, uint64_t offset, uint32_t chunks,
                                   uint32_t chunk, char *buffer, uint32_t &got) {
   if (chunks == 1) return file.Read(offset, chunk, buffer, got, 60);
   XrdCl::ChunkList list;
   for (uint32_t i = 0; i < chunks; ++i) list.emplace_back(offset + uint64_t(i) * chunk, chunk);
   XrdCl::VectorReadInfo *info = nullptr;
   XrdCl::XRootDStatus st = file.VectorRead(list, buffer, info, 60);
   std::unique_ptr<XrdCl::VectorReadInfo> owned(info);
   got = info ? info->GetSize() : 0;
   return st;
}

int main(int argc, char **argv) {
   if (argc < 6) {
      std::fprintf(stderr, "usage: xrdcl_paced URL REQUESTS PACE_S CHUNKS CHUNK\n");
      return 2;
   }
   const int requests = std::atoi(argv[2]);
   const std::chrono::duration<double> pace(std::atof(argv[3]));
   const uint32_t chunks = std::atoi(argv[4]), chunk = std::atoi(argv[5]);
   const uint32_t size = chunks * chunk;
   XrdCl::File file;
   XrdCl::XRootDStatus st = file.Open(argv[1], XrdCl::OpenFlags::Read);
   if (!st.IsOK()) {
      std::fprintf(stderr, "open %s: %s\n", argv[1], st.ToString().c_str());
      return 1;
   }
   std::vector<char> buffer(size);
   const double cpu0 = cpu_s();
   const auto t0 = std::chrono::steady_clock::now();
   for (int k = 0; k < requests; ++k) {
      std::this_thread::sleep_for(pace);
      uint32_t got = 0;
      st = request(file, uint64_t(k) * size, chunks, chunk, buffer.data(), got);
      if (!st.IsOK() || got != size) {
         std::fprintf(stderr, "request %d: %s (%u bytes)\n", k, st.ToString().c_str(), got);
         return 1;
      }
   }
   const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
   std::printf("%.6f %.6f\n", cpu_s() - cpu0, wall);
   return 0;
}
