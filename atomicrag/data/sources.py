"""Where each dataset's source files live: pinned repository revisions, sizes and checksums.

Every file is pinned twice: by the commit in its URL and by its git blob id (the SHA-1 git itself
gives the file's content at that commit), so a download is checked against the exact bytes the
normalised copies were built from. Files small enough to be mirrored here also carry their sha256
and size; the largest HippoRAG files (over 4 MiB) could not be read ahead, so for them the git blob
id is the check (``fetch.verify`` computes it from the downloaded bytes).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Repo:
    """A public repository at one commit."""

    slug: str  # owner/name on GitHub
    commit: str
    licence: str  # what the repository (and the data inside it) is released under, as far as known


REPOS: dict[str, Repo] = {
    "atomicrag": Repo("7HHHHH/AtomicRAG", "4e6f0ed485c7839dae200d112f89efde2d51b41b", "MIT (AtomicRAG authors)"),
    "hipporag": Repo("OSU-NLP-Group/HippoRAG", "c617143f01477243992a63b2e2151cc003dd3b21", "MIT (HippoRAG authors)"),
    "graphrag_bench": Repo("GraphRAG-Bench/GraphRAG-Benchmark", "e00aa63faf4f4792640c95bf2be5b13a82eb2239",
                           "no licence stated in the repository"),
}


@dataclass(frozen=True)
class SourceFile:
    """One file of a source repository."""

    repo: str  # key of REPOS
    path: str  # path inside the repository
    git_blob: str  # git blob id (SHA-1 of the header "blob <size>" and a NUL byte, then the content)
    size: int | None  # bytes, when known ahead
    sha256: str | None  # when known ahead

    @property
    def url(self) -> str:
        r = REPOS[self.repo]
        return f"https://raw.githubusercontent.com/{r.slug}/{r.commit}/{self.path}"


def _f(repo: str, path: str, git_blob: str, size: int | None, sha256: str | None) -> SourceFile:
    return SourceFile(repo, path, git_blob, size, sha256)


FILES: list[SourceFile] = [
    _f("atomicrag", "dataset/2wikimultihop/2WikiMultiHop/chunks.json", "57e794b155bf0a5e24f02743aca110561700fd86", 2999636, "4806de0eef3322d42c4c8f78010510856b97621eec5641adeea93bac4292e203"),
    _f("atomicrag", "dataset/2wikimultihop/2WikiMultiHop/questions.json", "800a7ab61b2755b1cbaa210c8d2a0d5dbce2aa1a", 777574, "246e43fb624413e38e11e3a582d5945185a3290efe4c2adbe32af2f112b70ab8"),
    _f("atomicrag", "dataset/medical/Medical/chunks.json", "f5159721516b78f9f2beaba8df10cbd01f09d9b5", 1222720, "9c418a283b212a5bf70ab723287aa7f7d7e854fd4a1cd95e265b754d007553fc"),
    _f("atomicrag", "dataset/medical/Medical/questions.json", "af93362aa09a63824922abf32f1dba227ef57571", 1564544, "ccd4e57156c24cdd3a9ae42aa3cd42b4312b3e84eab8dfbf05932d721a99a3ab"),
    _f("atomicrag", "dataset/musique/Musique/questions.json", "3367bd0af683486d46be341c562957b5c90196c7", 295704, "3b5d86bd2c577894ddf55560e1aad57a734f731c5315ed3cf445617085f3dc50"),
    _f("atomicrag", "dataset/novel/Novel-10146/chunks.json", "4058f6baf7ecf586b12f540e2a96cc7497b8cfa2", 281495, "fdeb299a048ef9501e8fd1e2b2160b40ef06a9ec16c9e1b3a0d2be4433173a73"),
    _f("atomicrag", "dataset/novel/Novel-10146/questions.json", "a81962b614581066e292448a6bfe5efb8f6261d8", 74144, "b603696473d1d63a7130ce550ea870bf46dd4505e914aa8968834c60710a6bbd"),
    _f("atomicrag", "dataset/novel/Novel-10321/chunks.json", "a9fb6c70a70ec551331d9edd604061a4dc276938", 373902, "76157db3546a774e88b8834f2f4acd83f6dcbdf971c21f0b09236fab0731bed6"),
    _f("atomicrag", "dataset/novel/Novel-10321/questions.json", "d22732730fffb44978be1766d5c5fd3d3d7f2e90", 39693, "4672862b2ae890bfda724e7a2d1e96715c58139216ee8831ad3c4cb33c4db67b"),
    _f("atomicrag", "dataset/novel/Novel-10356/chunks.json", "244596a22319b7429102071f4c06b7a0aa9e5ada", 358215, "6efc0d434a3a8dd10b6d95c19076d1c61fb0d71c1a4200881dd767a4314e0a77"),
    _f("atomicrag", "dataset/novel/Novel-10356/questions.json", "3e1182efd39aff58b5bec38d91b97ad8c60857d8", 74004, "5281a8936e2bc329f45e2bd4f3e7ca93ff489610f6f3fb7598fb8b94b3d45c11"),
    _f("atomicrag", "dataset/novel/Novel-10762/chunks.json", "7ae0df199aa6be7d282bb2ac708bb2832b999586", 396468, "55b6fb75a95fb63666a2fe425f1fcf68ed9a30a3cf7513873e0877f2698a274b"),
    _f("atomicrag", "dataset/novel/Novel-10762/questions.json", "471fbb904ffea9b01a87195a6a94c44e882b16a4", 55006, "7042b0015017dde45d93b4af50d98b7e94ddcc81d40e6b7cc6d66901d35a872c"),
    _f("atomicrag", "dataset/novel/Novel-2544/chunks.json", "b0540e03bb83beee5efcc70869c792b186318cda", 404837, "3711bdda23e883fd56830335f58300db2e000d791f4f1b679c15838a5fe0bdf2"),
    _f("atomicrag", "dataset/novel/Novel-2544/questions.json", "7836d5e1ce6ade035e9acf330ed10d0003de0131", 65693, "51e33677e6be865fa0032ef8d9594035accbaff46c2da68dfa9ebc6b93c92774"),
    _f("atomicrag", "dataset/novel/Novel-25646/chunks.json", "5582baa5d373d8a62547ecead77282520bafbeec", 108672, "5f618e331cc78ab7f4400feeb1d4509e04a9c636d1216d2525ca59e461ba50fe"),
    _f("atomicrag", "dataset/novel/Novel-25646/questions.json", "1152dda6ce8c175634406aae72233032f52554ba", 58099, "528bdeba804da0ba84c43168e4256915bd94384319d1d2c6af42e73bbc5be9d8"),
    _f("atomicrag", "dataset/novel/Novel-26183/chunks.json", "930c70a8cdd82e69ce8f3a9a79d0cd0fc512cd6c", 537257, "a73fa254cc350b05102258405931a74c7d065a93aff74879151c9eecf60e285c"),
    _f("atomicrag", "dataset/novel/Novel-26183/questions.json", "f2bb9fb1ce317082c7ad39dbcc901bb56dbfe9b2", 56673, "738062ff1e695951ef4cde5b49f28fa8ce7fbb862b48cfbf726b1f6d46c86300"),
    _f("atomicrag", "dataset/novel/Novel-29973/chunks.json", "31730777aba8ee6672dc6d18f010eb5fa2d8064f", 189398, "33b505ee0a6203cf5e685fda54270c09b8dfaaaa1833db2e7f012569e8d47ba5"),
    _f("atomicrag", "dataset/novel/Novel-29973/questions.json", "def6129ee9e88ad2909f985f6740461e4feb2ecd", 69323, "c1d61dce780ee81aa2ab05e6122f5eac2d8b8d5605d9d7a276f683502adfca45"),
    _f("atomicrag", "dataset/novel/Novel-30752/chunks.json", "f2f2a0a549cac8c624abb0aaf3613b2d791a8cb0", 196205, "0d8bd7027b7fea4153665dcf6a60aa5f5e00f029c7c1700a8b87cc86001949e3"),
    _f("atomicrag", "dataset/novel/Novel-30752/questions.json", "3a87c455680e05644b2dab8599f49030fc7e9bf3", 48244, "8b2982fdd408dbc8ed77efbf0fb7337476bf77f278404e43c9c8560679ddc7b7"),
    _f("atomicrag", "dataset/novel/Novel-40700/chunks.json", "ece5dba66648fb1b4b86a048bab69001c54fd27e", 164018, "ff89e92864de30ae3c94321b3485ce32a79232324244060d68e240a4cb5f1b40"),
    _f("atomicrag", "dataset/novel/Novel-40700/questions.json", "073f0534558bffa1973c32cd54de4f679939e058", 54388, "c58801c0ac00cfedf327bf8429538848481bf1a4cebfc4f88fb687c3cc8a4adf"),
    _f("atomicrag", "dataset/novel/Novel-4128/chunks.json", "5361f42d287d2d745145e22f3a79b7abe117cd5f", 107257, "9b9e356e07f93652f0d5073c08a0dd6b70b96bbafe734798466217e1fbf3a0ac"),
    _f("atomicrag", "dataset/novel/Novel-4128/questions.json", "9d7f93da72ebb7f9d47dc1e1b5503e26d74c6938", 39324, "bdba6df458f56f1e9508fa914ccbcb6b63c84a1692aa5165804f28238e28efb3"),
    _f("atomicrag", "dataset/novel/Novel-41603/chunks.json", "511eaa1186871a19bd2837f4d70f057733009a7e", 316784, "fdf26d9423272e90a4a6874ebab523aed8bb94af425579d9f88086809ff41c7e"),
    _f("atomicrag", "dataset/novel/Novel-41603/questions.json", "cce5a4983e53eaef6d8873991846e0e4dfd64086", 65803, "dcd80a512e77c2f277ef963e46d71875e717907de7f4ff4c4259528244855e4e"),
    _f("atomicrag", "dataset/novel/Novel-44557/chunks.json", "31cce2bbddb4aa60996089c415c3de0a6ea1c3fb", 278549, "1af43a012e40ddc843e42921104efd373f818107aba2aec5c5e4296cd972debf"),
    _f("atomicrag", "dataset/novel/Novel-44557/questions.json", "5cb8b4132df357f66be19515058072f2b39ee138", 59919, "2368a422a428f468fe8d5f7d1869b0584d3b158aa919346ff87be7816e0ed90e"),
    _f("atomicrag", "dataset/novel/Novel-47558/chunks.json", "a3415730dd9d9e2b9a540953b3e70ff738f1e129", 168548, "234fd66c6d1597167ae9130492aa2510159e95b8be7113b04b1d9f95bb0bfb69"),
    _f("atomicrag", "dataset/novel/Novel-47558/questions.json", "1e5d2d9175c11d6f51335af2f88bd4c05a0377b7", 64025, "fe90515d12d3d9bea1d32dc726cfe707ad9984c93d6cfee79d435af636e2e207"),
    _f("atomicrag", "dataset/novel/Novel-47676/chunks.json", "7a0ef56f8cc22b5e85c49540401dad49f76362be", 357110, "f5cc451f0fadf94f2cfa05c96d4c309bfde06dcbf9257941d740e1e935bb818b"),
    _f("atomicrag", "dataset/novel/Novel-47676/questions.json", "3b50270c50f80ea0156f77a72de3c190984b01df", 40918, "187784235977e7d43552114f8bca428061030600479bfc844fdc13011dc1d078"),
    _f("atomicrag", "dataset/novel/Novel-51410/chunks.json", "2a9f22f6870ba1516b5a0b5424f764983be79e01", 392859, "423f58d3acc17eea6f02561613aa6c7e4cd0b8c759ca5d74eec0c04844482688"),
    _f("atomicrag", "dataset/novel/Novel-51410/questions.json", "dd76d1bf7d8ea3c00d6d32845b3761d0b0f804cb", 48294, "5f70b9c0a567c0188e9030f1fa72fe63dbdbe067683a793d1d9e918e7dfa0bd3"),
    _f("atomicrag", "dataset/novel/Novel-54537/chunks.json", "56afe8e8eb8b548a6cc2ef179a41670f5d566e3a", 222316, "e536050c6bccdeb1ad3ae2c3ebb5a2b095d5a86e9067e66b2b893ff0451c7a2a"),
    _f("atomicrag", "dataset/novel/Novel-54537/questions.json", "86527b1388ad9386c16e14573b367c6fb0e3e7a8", 78320, "02685c1b956d0b5f32cd9c43edd02410843ca927e929cfeeec6bf96731473816"),
    _f("atomicrag", "dataset/novel/Novel-58553/chunks.json", "29c94ec59412ff108410f6cec166b941ade92ead", 225974, "9785bcae5d46d387d39c58296fbe14f44e7de62a3cc81c2889eba977203ca2a5"),
    _f("atomicrag", "dataset/novel/Novel-58553/questions.json", "27e5acced001ab6d0e51b58dfb6a4423b8f9cc2c", 59368, "daac98a5315a6644b180eba411d6f2d2584ff1fc49bb177575db8d1354f5d812"),
    _f("atomicrag", "dataset/novel/Novel-5956/chunks.json", "4a7d3cb3d713464b89fd5cb2540c88c4056bf110", 298236, "3712f71243e2de741be08bf0ad08da649886b948e3cb857bc15ac59b6b256f4a"),
    _f("atomicrag", "dataset/novel/Novel-5956/questions.json", "a3f9953e253ef4a0fcf6742d1875d4e22ad341e4", 44961, "0e9ceaa59723359b90ec5517eb9dcc76b8644e822063d7405163de968f1631a5"),
    _f("atomicrag", "dataset/novel/Novel-8559/chunks.json", "e7e6699b254d06136255ac7612118a08a9d7d599", 262880, "af44d8a496f1fba07b4b1e9f90346870c640dbd69ce2ac2b2205bc1dca05f0d8"),
    _f("atomicrag", "dataset/novel/Novel-8559/questions.json", "079f7a288ff19e47b02d652eda99c7f7492f74bd", 75059, "8be2bf567ffe0d71d430d85f3377baa65b7bbc312db8ea82ea1958086dabf1af"),
    _f("atomicrag", "datasets/atomicrag/abstract_qa/Corpus/novel.parquet", "64a2a44c9b95bd69bca004b5c112f4763c9cf4ed", 2953941, "cd0f345b5533ddcdb014b1da21e7fe5045963a99abc4a008563d5d9bc8fecbdb"),
    _f("atomicrag", "datasets/atomicrag/abstract_qa/Questions/medical_questions.parquet", "d7527bf29fb6992dfcf9c078f76c1dc2ea15ab66", 716539, "d9a2304b775e3cbc155789c58d9ce8f55dc5a29b79679c1a17e383e329a02f17"),
    _f("atomicrag", "datasets/atomicrag/abstract_qa/Questions/novel_questions.parquet", "cdae8526448b6e1eab482bee56e1f95fa032da10", 549921, "126eb4e749f272e49ea6388dcc4942512fb53789d3f9cfb14a2467990efe4c09"),
    _f("graphrag_bench", "Datas/Corpus/medical.json", "ec0d49d4479244d6b30ae6005df6cff6cece6523", 1055153, "39ba262caf26bbc8070af7f96b48a09d9ed6a249c02837314229f3d783f0a0f6"),
    _f("graphrag_bench", "Datas/Questions/medical_questions.json", "6548fc6f5825b1a79003e390a49d4043449eaa4e", 889409, "c62cee56cf4c0cf9142751f4ac342ce2e6d1a35bdaa3e7666998352158e92c02"),
    _f("hipporag", "reproduce/dataset/2wikimultihopqa.json", "c87b01db53166b2b85b82d8773c6ed685bab2c16", None, None),
    _f("hipporag", "reproduce/dataset/2wikimultihopqa_corpus.json", "d2e236375a97ee41d27287b9efb3ef9036d1e072", 3083943, "9d6e352952aafb18dab22bf8195039461321a44a949df902ae83bce134ad238a"),
    _f("hipporag", "reproduce/dataset/hotpotqa.json", "dcb199ffd41a96b5880c08c2948d07ecf4e09e44", None, None),
    _f("hipporag", "reproduce/dataset/hotpotqa_corpus.json", "69b0e793004d8f5ff1760f4ed363ab6f23aaa7d8", None, None),
    _f("hipporag", "reproduce/dataset/musique.json", "fc0fcba05225d0975f0437deb3814418bf570942", None, None),
    _f("hipporag", "reproduce/dataset/musique_corpus.json", "01ebb7c8a513e64350768acb5679d8c4ebfde241", None, None),
]
BY_PATH: dict[tuple[str, str], SourceFile] = {(f.repo, f.path): f for f in FILES}


def source(repo: str, path: str) -> SourceFile:
    """The pinned file ``path`` of ``repo``; a KeyError names what is pinned."""
    try:
        return BY_PATH[(repo, path)]
    except KeyError:
        raise KeyError(f"no pinned source file {repo}:{path}") from None


NOVELS: list[str] = sorted({f.path.split("/")[2] for f in FILES if f.path.startswith("dataset/novel/")})
