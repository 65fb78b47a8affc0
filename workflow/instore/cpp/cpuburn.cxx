// instore's synthetic analysis cost, shared by the TTree and RNTuple event loops (declared to
// cling before them: see instore.rootenv.declare).
#include <ctime>

namespace instore {

// Spend `us` microseconds of this thread's CPU time: the synthetic analysis cost per event.
// CPU time, not wall time, so a job sharing a core still does the same work.
inline void burn(double us) {
   if (us <= 0) return;
   timespec t0, t;
   clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
   volatile double x = 0;
   double elapsed = 0;
   do {
      for (int i = 0; i < 64; ++i) x = x + i * 0.5;
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
      elapsed = (t.tv_sec - t0.tv_sec) * 1e6 + (t.tv_nsec - t0.tv_nsec) * 1e-3;
   } while (elapsed < us);
}

}  // namespace instore
