// instore, ROOT engine: http(s) through XrdClHttp (Davix) inside ROOT's own XRootD client.
//
// TNetXNGFile forces the URL's protocol to root:// before it opens (so an https URL reaches the
// HTTP port speaking xrootd). This TFile hands the URL to XrdCl::File unchanged; XrdCl's
// plug-in manager then gives http(s) to the XrdClHttp plug-in, which reads through Davix with
// the X.509 proxy (X509_USER_PROXY, X509_CERT_DIR) as grid ROOT builds do. Reads are counted
// and reported to gPerfStats like TNetXNGFile's, so TTreePerfStats and the access log see them.
#include <sys/cdefs.h>
#ifndef __attr_access  // the wheel's cling lacks this glibc attribute macro (sys/uio.h uses it)
#define __attr_access(x)
#endif
#include <TFile.h>
#include <TROOT.h>
#include <TTimeStamp.h>
#include <TVirtualPerfStats.h>
#include <XrdCl/XrdClFile.hh>
#include <XrdCl/XrdClXRootDResponses.hh>
#include <string>
#include <vector>

namespace instore {

class XrdClHttpFile : public TFile {
   XrdCl::File fXrd;
   Long64_t fXrdSize = -1;

   void Count(Int_t bytes, Long64_t start_offset, Double_t start)
   {
      fBytesRead += bytes;
      fgBytesRead += bytes;
      fReadCalls++;
      fgReadCalls++;
      if (gPerfStats) {
         Long64_t end = fOffset;
         fOffset = start_offset; // the access log keeps where a read started
         gPerfStats->FileReadEvent(this, bytes, start);
         fOffset = end;
      }
   }

public:
   std::string open_error;

   explicit XrdClHttpFile(const char *url) : TFile(url, "NET")
   {
      fOption = "READ";
      XrdCl::XRootDStatus st = fXrd.Open(url, XrdCl::OpenFlags::Read);
      if (!st.IsOK()) {
         open_error = st.ToStr();
         MakeZombie();
         gDirectory = gROOT;
         return;
      }
      XrdCl::StatInfo *info = nullptr;
      if (fXrd.Stat(false, info).IsOK() && info)
         fXrdSize = info->GetSize();
      delete info;
      TFile::Init(kFALSE);
   }

   ~XrdClHttpFile() override { Close(); }

   Bool_t IsOpen() const override { return fXrd.IsOpen(); }
   Long64_t GetSize() const override { return fXrdSize; }
   void Seek(Long64_t offset, ERelativeTo pos = kBeg) override { SetOffset(offset, pos); }

   void Close(Option_t *option = "") override
   {
      if (!fXrd.IsOpen())
         return;
      TFile::Close(option);
      XrdCl::XRootDStatus closed = fXrd.Close();
      (void)closed;
   }

   Bool_t ReadBuffer(char *buf, Int_t len) override { return ReadBuffer(buf, GetRelOffset(), len); }

   Bool_t ReadBuffer(char *buf, Long64_t pos, Int_t len) override
   {
      if (IsZombie() || !IsOpen())
         return kTRUE;
      SetOffset(pos);
      Int_t cached = ReadBufferViaCache(buf, len);
      if (cached)
         return cached == 2;
      Double_t start = gPerfStats ? Double_t(TTimeStamp()) : 0;
      Long64_t first = fOffset;
      uint32_t got = 0;
      XrdCl::XRootDStatus st = fXrd.Read(fOffset, len, buf, got);
      if (!st.IsOK() || Int_t(got) != len) {
         Error("ReadBuffer", "%s (got %u of %d bytes)", st.ToStr().c_str(), got, len);
         return kTRUE;
      }
      fOffset += got;
      Count(got, first, start);
      return kFALSE;
   }

   // One vector read (an HTTP multi-range GET in Davix) for all of TTreeCache's chunks.
   Bool_t ReadBuffers(char *buf, Long64_t *pos, Int_t *len, Int_t nbuf) override
   {
      if (IsZombie() || !IsOpen())
         return kTRUE;
      Double_t start = gPerfStats ? Double_t(TTimeStamp()) : 0;
      XrdCl::ChunkList chunks;
      Int_t total = 0;
      char *cursor = buf;
      for (Int_t i = 0; i < nbuf; ++i) {
         chunks.emplace_back(pos[i] + fArchiveOffset, len[i], cursor);
         cursor += len[i];
         total += len[i];
      }
      XrdCl::VectorReadInfo *info = nullptr;
      XrdCl::XRootDStatus st = fXrd.VectorRead(chunks, nullptr, info);
      delete info;
      if (!st.IsOK()) {
         Error("ReadBuffers", "%s", st.ToStr().c_str());
         return kTRUE;
      }
      Count(total, nbuf ? pos[0] : 0, start);
      return kFALSE;
   }
};

} // namespace instore
