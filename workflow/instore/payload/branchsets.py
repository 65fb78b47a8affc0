"""Named read patterns: the branch sets real analyses read, by name.

The IRIS-HEP Analysis Grand Challenge (AGC) measures I/O with five cumulative sets of NanoAOD
branches, named after the share of its ttbar files' bytes they read (its ``only_do_IO`` in
``analyses/cms-open-data-ttbar/ttbar_analysis_pipeline``, iris-hep/analysis-grand-challenge).
Each set here includes the smaller ones, as the AGC's does. On the shipped ``cms-nanoaod``
template they hold 2.7%, 4.1%, 9.3%, 18% and 31% of the bytes (counters included).
"""

from __future__ import annotations

_AGC_STEPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("agc-2.7", ("Jet_pt", "Jet_eta", "Jet_phi", "Jet_btagCSVV2", "Jet_mass", "Muon_pt",
                 "Electron_pt")),
    ("agc-4", ("Electron_phi", "Electron_eta", "Electron_mass", "Muon_phi", "Muon_eta",
               "Muon_mass", "Photon_pt", "Photon_eta", "Photon_mass", "Jet_jetId")),
    ("agc-15", ("Jet_nConstituents", "Jet_electronIdx1", "Jet_electronIdx2", "Jet_muonIdx1",
                "Jet_muonIdx2", "Jet_chHEF", "Jet_area", "Jet_puId", "Jet_qgl", "Jet_btagDeepB",
                "Jet_btagDeepCvB", "Jet_btagDeepCvL", "Jet_btagDeepFlavB", "Jet_btagDeepFlavCvB",
                "Jet_btagDeepFlavCvL", "Jet_btagDeepFlavQG", "Jet_chEmEF", "Jet_chFPV0EF",
                "Jet_muEF", "Jet_muonSubtrFactor", "Jet_neEmEF", "Jet_neHEF", "Jet_puIdDisc")),
    ("agc-25", ("Jet_rawFactor", "Jet_bRegCorr", "Jet_bRegRes", "Jet_cRegCorr", "Jet_cRegRes",
                "Jet_nElectrons", "Jet_nMuons", "GenJet_pt", "GenJet_eta", "GenJet_phi",
                "GenJet_mass", "Tau_pt", "Tau_eta", "Tau_mass", "Tau_phi", "Muon_dxy",
                "Muon_dxyErr", "Muon_dxybs", "Muon_dz", "Muon_dzErr", "Electron_dxy",
                "Electron_dxyErr", "Electron_dz", "Electron_dzErr", "Electron_eInvMinusPInv",
                "Electron_energyErr", "Electron_hoe", "Electron_ip3d", "Electron_jetPtRelv2",
                "Electron_jetRelIso", "Electron_miniPFRelIso_all", "Electron_miniPFRelIso_chg",
                "Electron_mvaFall17V2Iso", "Electron_mvaFall17V2noIso", "Electron_pfRelIso03_all",
                "Electron_pfRelIso03_chg", "Electron_r9", "Electron_scEtOverPt", "Electron_sieie",
                "Electron_sip3d", "Electron_mvaTTH", "Electron_charge", "Electron_cutBased",
                "Electron_jetIdx", "Electron_pdgId", "Electron_photonIdx", "Electron_tightCharge")),
    ("agc-50", ("GenPart_pt", "GenPart_eta", "GenPart_phi", "GenPart_mass",
                "GenPart_genPartIdxMother", "GenPart_pdgId", "GenPart_status",
                "GenPart_statusFlags")),
)  # fmt: skip


def _cumulative() -> dict[str, tuple[str, ...]]:
    sets, acc = {}, ()
    for name, step in _AGC_STEPS:
        acc = acc + step
        sets[name] = acc
    return sets


BRANCH_SETS: dict[str, tuple[str, ...]] = _cumulative()
