"""Datasets by name: a local copy when there is one, otherwise a checksummed download.

``--data wnut17`` looks for ``<data dir>/wnut17/...`` (the data dir is ``--data-dir``, else
``$ENTANGLE_DATA_DIR``, else ``../shared/data`` when it exists) and otherwise downloads the
files from the dataset's public repository at a fixed commit into ``~/.cache/entangle``,
verifying each file's SHA-256.
"""

from __future__ import annotations

import hashlib
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

SPLITS = ("train", "dev", "test")

# SHA-256 of every file, by its path under the data directory.
CHECKSUMS = {
    "conll2003/iob2/dev.txt": "c02eb19809eafb83998326a0481942eb37d96f31826ae387cfe8773699969f5b",
    "conll2003/iob2/test.txt": "dc4ac7f3d6d01a6bec59261814561da3b287b6b493b97d1f69c580b52ec1831b",
    "conll2003/iob2/train.txt": "213953b5522fb7924802d883e50f027b2c6ffb5d4d0e63368ed82909f9b60423",
    "intraword_cs/german_turkish_SAGT_substitute/qtd_sagt-ud-dev.conllu": "d06630f3937b595596ec6ee87db2bd8a2a35b11577eb8a1df0f66bdd08bb9dcb",
    "intraword_cs/german_turkish_SAGT_substitute/qtd_sagt-ud-test.conllu": "0bbb06de66a490bfbb93d103a03d0d89e3835baf0af755a57b5fa5f885ae01bc",
    "intraword_cs/german_turkish_SAGT_substitute/qtd_sagt-ud-train.conllu": "6fc9d5c2a4b3df31fac2810ae0824d48bfc1d7c7617d0f1884422d7357156c45",
    "intraword_cs/spanish_wixarika/mixed_annotated.txt": "e4c17f093f69d840e80ddc7ed2559bd39e8e4b9b53304a05fb52e0eb259fd407",
    "masakhaner/amh/dev.txt": "f7561345b55d41ccf472c1306e0a0a8f8bc3d46ac535f5dee3d1da3f1a0bb816",
    "masakhaner/amh/test.txt": "3968ef19c31c480859364f927ac6370ae5c33c9557437e87c0b6f7801df461b6",
    "masakhaner/amh/train.txt": "44d6e06d6bedd2b902578ae658fc3ad6548b8876166a821893d081393a92afe4",
    "masakhaner/hau/dev.txt": "a4695528b190c629f417e66feda127650611ee8d0f0d0ce14dee8f1506da0f7f",
    "masakhaner/hau/test.txt": "1f636716cb1633490bc475951721d81a637b033045123f3ee84fee2a1ea06c70",
    "masakhaner/hau/train.txt": "f09523f77aacc7d89e935ce8fdd0d7d6afb7ba06e4a6040a431f295b0b937939",
    "masakhaner/ibo/dev.txt": "059e81794392a659efd65218ae988ff4ae680cd5beceae84caa5a8658767e8ee",
    "masakhaner/ibo/test.txt": "ecfc765813ac82b5807e3cf00e26020ec971e5ebd93c71e172c7f48df427d818",
    "masakhaner/ibo/train.txt": "9731a5268749b43c5f1c7ac1f420aa7b856cbe2a0002b14dd1d2f809257612bb",
    "masakhaner/kin/dev.txt": "2adff8ef6a84927a9ebf68760feaffba8ff4d220fde89d6da88e084287c6cae9",
    "masakhaner/kin/test.txt": "d49c012b50ef2e1e5f6e424f4348d18ebc171298dd0eb34ec5a000a353f3d98f",
    "masakhaner/kin/train.txt": "46960b853d33b08759ec04dea5ba390ac196573b9fb868556aa3ed9ecd613d5a",
    "masakhaner/lug/dev.txt": "654a457c9c7aaba690a6cab0a72390605288fd46668e3c17fa5f84596bbc740c",
    "masakhaner/lug/test.txt": "6b8b327cecc61d7228be95331e6bf3bbdeea84a3d023172359f0aa1c89b52ecc",
    "masakhaner/lug/train.txt": "5884e3c4be037b37dec9c1d60125638dad3510c81f903402d9c31f023deaf7fa",
    "masakhaner/luo/dev.txt": "37a270c722d1c5462907222bf3ff1cf2453075490f00867a4c8d90838080416a",
    "masakhaner/luo/test.txt": "9342c9a99a17b08daee32fe9ed414ab1e4810db886ba4e8b1c9f5522438479df",
    "masakhaner/luo/train.txt": "a676dba1a88bfbf352150145855252f7c47c271c37da8c2d09fb3560e899fcd9",
    "masakhaner/pcm/dev.txt": "34e2dc4868718fbb3646f2d65d3e7802866d4c17bde005ff28bfc3960de2f0bc",
    "masakhaner/pcm/test.txt": "de0dc15f4f74adff9486d03897354ef30ded9bedb73e058a96e3d1bd0a0c85fc",
    "masakhaner/pcm/train.txt": "7fbb8bc4f0b456e6283624d05a1bfd0e331c580ebf9564815d6f5b7453588272",
    "masakhaner/swa/dev.txt": "ee742c38cba9139f1a147baffe7d294d6e38599c67a66ec896500ac2666f53d3",
    "masakhaner/swa/test.txt": "f91b97def896572dfaaf6db247a01cc1a8b7bd2ce537c19956ec0a0a1ac5913c",
    "masakhaner/swa/train.txt": "3fbefb76d97a652a29c6f856946af60e31a92ad82927bb748092c5be1b96cb08",
    "masakhaner/wol/dev.txt": "48517a2ad733938805be4bdd285518bed75f14d62068abed74c7eece550e9630",
    "masakhaner/wol/test.txt": "4791d2b105f1022c6b9180b7d96d10d4daa864d7f7087f1822b55ddbdd22b931",
    "masakhaner/wol/train.txt": "160b946c5944313135cd0893030f9f2e5f305e1195e763124bfffd30eac787e8",
    "masakhaner/yor/dev.txt": "6fd8ba4c586606a08669ca56954185092f419ddf9c2c4d950815a1cb03af3832",
    "masakhaner/yor/test.txt": "fbace84a8b7cc0c4078f1600a2408b06b3d182977bb64d55318590cba56c2058",
    "masakhaner/yor/train.txt": "8baf42a3231ab6f10ce7ed5ed434a5a5447634d1cdf979ac932b2496e3566784",
    "tweebank_v2/en-ud-tweet-dev.conllu": "3950416f04a540f72b5252d3db354171860831c197c2c04b40c33325a476fa35",
    "tweebank_v2/en-ud-tweet-test.conllu": "64b32264bc6475049335178f6d51be1d2be0cf86b8636022471a796e59305c41",
    "tweebank_v2/en-ud-tweet-train.conllu": "ff92d8947dabd41850057dd3a05b32f48610b2e084be4991162b79ea1be8f46d",
    "tweeteval/emoji/mapping.txt": "ac172bfbb0972d875a832224f48602472279be365454e3bce01084689100f4d3",
    "tweeteval/emoji/test_labels.txt": "c1662b84788f36674ab8f0106f3e2e7d3e258ddf4959086ac7cc75b1e68dd1f6",
    "tweeteval/emoji/test_text.txt": "e4de11de1597842c431dd67868e83322f5a432564dfd8558889ed8ac6a1a5e09",
    "tweeteval/emoji/train_labels.txt": "daee7da826683dbfa50ad3a29c60bc527e498f06c70eabee3745a99cc37ab3a5",
    "tweeteval/emoji/train_text.txt": "eacb6b0ee1fe2803d72a009c2e731fe07659f604318a979951d2f07c23c564a1",
    "tweeteval/emoji/val_labels.txt": "21ba456f688668d049ff0fb1fa04469ee684cf4e2467c71d2c3fe5ca2ba1bd1a",
    "tweeteval/emoji/val_text.txt": "3bc3742d6af404cea792671878684d110f3bc02fd79a2e34643789a521d81a26",
    "tweeteval/emotion/mapping.txt": "656dea85d149716af96206ca19bec0d94e9dc6de3f5079f5c7c2a241ec76cadb",
    "tweeteval/emotion/test_labels.txt": "245072348c711961785be6d395997f97cf7fcda3effeae7805664171dc75f913",
    "tweeteval/emotion/test_text.txt": "7e1070f5d3e3fcece5bc73680bff9981e90d8f7b2f1009bfe7a01d059d1c6091",
    "tweeteval/emotion/train_labels.txt": "987e767d8679e18abdf7de37a6d2bcd0a40a296ddd704e8d515cf0e3033c8d9c",
    "tweeteval/emotion/train_text.txt": "2c62f67aeb3eac1aea0e5a9c3d0f4bc337992581f3f858061786a1fb4d79d95e",
    "tweeteval/emotion/val_labels.txt": "313730630160b7e0a6b4235b800c76683f4aeeb72d094eb69646630cd5cfe338",
    "tweeteval/emotion/val_text.txt": "e2e30c86b8cbb97944d6543aedc06eace3bb275cb2f381aba787b838b4f23ca5",
    "tweeteval/hate/mapping.txt": "3fc75504ffae64ddc82e13afb5790af7798cd3167d7d35790abe78b39b991896",
    "tweeteval/hate/test_labels.txt": "c14adca6b3627616a835c5ccea8a1cceb0235cd79417257f093eb0e16a69c62f",
    "tweeteval/hate/test_text.txt": "bc4762876a8dd8baa55c3cd7b03108e3231a5d691e80b8b1ef97c5be31b9da9a",
    "tweeteval/hate/train_labels.txt": "4e8fde025a453a25c94632794254131dedeac4e57228ad64157c41571cc88f71",
    "tweeteval/hate/train_text.txt": "6572bb3a42143128a5dfa99af8debeb0668e637c34b2d1e3140dac47316fe2c2",
    "tweeteval/hate/val_labels.txt": "5092badf1a0e70036ea6264bcd0b78afc07d0f4a512fa6af34c2c4973600656b",
    "tweeteval/hate/val_text.txt": "1ff78b1ed4c5ce43284b9eba32eb7d60c6d45d0d1b3b4d6df456ae01640764f1",
    "tweeteval/irony/mapping.txt": "70e09046e181179b9870a2f59a3263bbb28c787831779e4ce4a18373d054296b",
    "tweeteval/irony/test_labels.txt": "08e2095e1725e74907a380614c220204e356bb46e3e8c93deb74e83e5b15ab38",
    "tweeteval/irony/test_text.txt": "53103da934a7308eee82f05f2a9781a8ea3e88604fdc1e02d3101108505c64be",
    "tweeteval/irony/train_labels.txt": "fc69e6106c0f1f433a91536e08f83c71a391d7b219f7684d42f243a8089af77d",
    "tweeteval/irony/train_text.txt": "a888125a44f7dfaa25b026318748d0e62cc9a300d20f66eafd62011a19eaea23",
    "tweeteval/irony/val_labels.txt": "ccf429f63b4e8d0e7f425ca09445f7c31f7cea8a1b7c283b015b117c4002fd07",
    "tweeteval/irony/val_text.txt": "8806cf3793e300a485cfae34892fc3a0a2f9a183deb06c750c6531515c83051e",
    "tweeteval/offensive/mapping.txt": "3e427f483dd5d5be21ae85dcf224c36b3d024af27999939fa0d438d695801c50",
    "tweeteval/offensive/test_labels.txt": "41d05a7aa0b01f5dafab21b95adb4f979cb4226c046ff315702774d10dac1605",
    "tweeteval/offensive/test_text.txt": "25b08c3333c26190f1023961c4508ec9aab24d4722b1a3ea7a6040724c120547",
    "tweeteval/offensive/train_labels.txt": "c0b7d6ebdaa4ebcf6fc557ef1e775d92eda160218a0e3b1dd48eb8234dc892a6",
    "tweeteval/offensive/train_text.txt": "78a7a32e38b10af7d8970b008bf17f661c8d0a90dad145fa0fa6a944669650db",
    "tweeteval/offensive/val_labels.txt": "ed2deb776bd1c52fb8221fadd3360e32d9dfe46842d78053528126e46363a258",
    "tweeteval/offensive/val_text.txt": "816f36d180c35f15a5104838cb73856a0bef42043482fe738f3481b06242a55c",
    "tweeteval/stance/abortion/test_labels.txt": "c90e6d36d863f876d6661620d37b613b4b07858a5277c8d6623713ee59ca451c",
    "tweeteval/stance/abortion/test_text.txt": "bf0e16a0b8ca4cf0ab90efbc560db3151c288fc842f5e3c6554e8589d521556a",
    "tweeteval/stance/abortion/train_labels.txt": "e6786a594bd9a083c524a0f420c690351140b52af288f487cb4772d29675b014",
    "tweeteval/stance/abortion/train_text.txt": "a421d5b8fd9f972970b9275b83f65745bf81986d2a412b4caa2ba071f3efa916",
    "tweeteval/stance/abortion/val_labels.txt": "8df57a50823d5f3683ecf75d824a42e3b08eb52e25e3e2d6928f523097a0c050",
    "tweeteval/stance/abortion/val_text.txt": "0428ab3f2894936f2445a9020763c2bd19ed42986872168bb65886dede5843fd",
    "tweeteval/stance/atheism/test_labels.txt": "4ef7c9398d265cfac625092c834e43cef9da9cb318e563493abb64f65dfe1b52",
    "tweeteval/stance/atheism/test_text.txt": "16c5336b2cba606ca63a6afcc50241be63a8fccf021628c6505449439b9d54b3",
    "tweeteval/stance/atheism/train_labels.txt": "a764aac1a75ccb32c4ffc4c03c66dc365cb50f013d3e94549bf775636cbc8373",
    "tweeteval/stance/atheism/train_text.txt": "0e82f1d4a16d79a38a68aee761762cf8a846bc8f7f9395670ca44e2ecf2f58f7",
    "tweeteval/stance/atheism/val_labels.txt": "638095b3582f927fd1481cdb8d1f9f670f8d27880baf32c0b26c5946fd8f8292",
    "tweeteval/stance/atheism/val_text.txt": "5fe14c4c01f87a45dba640dddbb1d1909a893f9565f159c48fa1ba35bb46c209",
    "tweeteval/stance/climate/test_labels.txt": "193c9f2358f61d9efe558324ec89ecaf08e600a44b68128f47838c01d9f98dfd",
    "tweeteval/stance/climate/test_text.txt": "41ee8ee2ad3c36e0629654fdb271f37775197c79be8b299adbeadd2003b63c53",
    "tweeteval/stance/climate/train_labels.txt": "d6274f55bc95f5a7f2ae591b886c1414a7664aaf4e0c609f4ba6cf377929af18",
    "tweeteval/stance/climate/train_text.txt": "4803211832d318026323a8e5014cff1b95e1c8c3854378101e5d1a8c82582eb7",
    "tweeteval/stance/climate/val_labels.txt": "0cb133ab9b137292f075210db45f7e293dc52798a4e21e59037bfcfe66c97aa6",
    "tweeteval/stance/climate/val_text.txt": "fc5714703add266801ee2fd98296ea20ec0879e89cdb9f906d9812d9f640f2ba",
    "tweeteval/stance/feminist/test_labels.txt": "ddbde6d253ee47c5d5ef8bc5386270fde45cf088d3be70bba9c382b8a024897a",
    "tweeteval/stance/feminist/test_text.txt": "1bfdbdc2af64fd62dcc775d1288e192ac8ff805ef27ccf3aaac54a98616eefda",
    "tweeteval/stance/feminist/train_labels.txt": "abd4f196d801423bb0daba8c0ecf5b3efba1f10e8f410c3dfa360b50c8b9c685",
    "tweeteval/stance/feminist/train_text.txt": "c176e6663973c8e78bfa92ba1e8874a70cc5358567d71584a90943bc6525eaab",
    "tweeteval/stance/feminist/val_labels.txt": "399e0d468d0e4ead7a445f69efdf35876c835acf4cefc00a16f451a5d42e5c13",
    "tweeteval/stance/feminist/val_text.txt": "3518b2ddcf696626a7243d7cea720a975718c7a52a5a086931be87897c1de58b",
    "tweeteval/stance/hillary/test_labels.txt": "068468f6a72b85dfb65bf10e45f2453fa082d1ea9d7a40e7f560d5b6d75027f3",
    "tweeteval/stance/hillary/test_text.txt": "5c4e020285a62cfd88f264849e1db242ded356c171b1a68dd0050b76635053aa",
    "tweeteval/stance/hillary/train_labels.txt": "0ea5753d13a717a9e91581d1d89c0b5206c8f905f0a717b2b27d02dbf419250d",
    "tweeteval/stance/hillary/train_text.txt": "0bd735de895cb74d63c224e64e3d955cac99be97aa225f803fe4d2f5978a2c99",
    "tweeteval/stance/hillary/val_labels.txt": "e5d44c771b7349a4a74309f56ca072fdf8f1c015068d519ca2ed3a931c833606",
    "tweeteval/stance/hillary/val_text.txt": "9714b7dcc8617e095433d7b63df8aa155eb84216b9ac9195105ab83d85cd248d",
    "tweeteval/stance/mapping.txt": "0f8a803dc1773c84279506f25d54b5a9eec7edfc277b41eb75076744dc89b26f",
    "wnut17/emerging.dev.conll": "e053b752b8155113ca66e7db08af5f2f5f43ab993694e4774f1ec5bad42312d8",
    "wnut17/emerging.test.annotated": "2aa79b764e56ec9264a1b30fdd9b70195bd00ff400b62edd8f399d5f13c178f0",
    "wnut17/wnut17train.conll": "731820e13f71af324c6b55a1575ec2ce59fbaa2a0806f8f0400b98d56cd6a7a5",
}

MASAKHANER_LANGUAGES = ("amh", "hau", "ibo", "kin", "lug", "luo", "pcm", "swa", "wol", "yor")


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    task: str
    #: split -> path under the data directory; a dataset without a published split has one
    #: file, ``all``, which ``load_corpus`` splits by post id (``entangle.data.intraword.split_by_id``)
    files: dict[str, str]
    #: path under the data directory -> download URL
    urls: dict[str, str]
    token_column: int = 0
    tag_column: int = -1
    #: Files a split's reader needs beside its own (e.g. TweetEval's labels and class names).
    support: tuple[str, ...] = ()


def _spec(name: str, files: dict[str, str], base_url: str, url_paths: dict[str, str], task: str = "ner") -> DatasetSpec:
    return DatasetSpec(name, task, files, {files[s]: base_url + url_paths[s] for s in files})


DATASETS: dict[str, DatasetSpec] = {
    "wnut17": _spec(
        "wnut17",
        {"train": "wnut17/wnut17train.conll", "dev": "wnut17/emerging.dev.conll", "test": "wnut17/emerging.test.annotated"},
        "https://raw.githubusercontent.com/leondz/emerging_entities_17/e52a2d2a71ac1a051ca2d532eef28653c5c02603/",
        {"train": "wnut17train.conll", "dev": "emerging.dev.conll", "test": "emerging.test.annotated"},
    ),
    "conll2003": _spec(
        "conll2003",
        {split: f"conll2003/iob2/{split}.txt" for split in SPLITS},
        "https://raw.githubusercontent.com/kyzhouhzau/BERT-NER/0f77e478872453df51cd3c65d1a39b12d9617f9d/old_version/NERdata/",
        {split: f"{split}.txt" for split in SPLITS},
    ),
    # POS tagging of tweets: UPOS of the syntactic words (CoNLL-U).
    "tweebank": _spec(
        "tweebank",
        {split: f"tweebank_v2/en-ud-tweet-{split}.conllu" for split in SPLITS},
        "https://raw.githubusercontent.com/Oneplus/Tweebank/2bdd029fb16321c715c00480b7df58df22901e18/",
        {split: f"en-ud-tweet-{split}.conllu" for split in SPLITS},
        task="tagging",
    ),
    # Intra-word code-switching, a language label per character (entangle.data.intraword).
    "spanish-wixarika": _spec(
        "spanish-wixarika",
        {"all": "intraword_cs/spanish_wixarika/mixed_annotated.txt"},
        "https://raw.githubusercontent.com/pywirrarika/wixarikacorpora/67fc7a743ae599252d3b6481317a7d93e004af4c/",
        {"all": "cswixes/mixed_annotated.txt"},
        task="char-tagging",
    ),
    "turkish-german-sagt": _spec(
        "turkish-german-sagt",
        {split: f"intraword_cs/german_turkish_SAGT_substitute/qtd_sagt-ud-{split}.conllu" for split in SPLITS},
        "https://raw.githubusercontent.com/UniversalDependencies/UD_Turkish_German-SAGT/"
        "9df27ce241d28d25f40b27f616468563771fb6e7/",
        {split: f"qtd_sagt-ud-{split}.conllu" for split in SPLITS},
        task="char-tagging",
    ),
}
#: TweetEval tasks with one label per tweet (``sentiment`` is left out: its training text could not be
#: obtained); stance is one task per topic, its class names shared by the topics (``stance/mapping.txt``).
TWEETEVAL_TASKS = ("emoji", "emotion", "hate", "irony", "offensive")
TWEETEVAL_STANCE_TOPICS = ("abortion", "atheism", "climate", "feminist", "hillary")
for _task in (*TWEETEVAL_TASKS, *(f"stance/{topic}" for topic in TWEETEVAL_STANCE_TOPICS)):
    _files = {split: f"tweeteval/{_task}/{stem}_text.txt" for split, stem in (("train", "train"), ("dev", "val"), ("test", "test"))}
    _mapping = "tweeteval/stance/mapping.txt" if _task.startswith("stance/") else f"tweeteval/{_task}/mapping.txt"
    _support = (_mapping, *(f"tweeteval/{_task}/{split}_labels.txt" for split in ("train", "val", "test")))
    _name = "tweeteval-" + _task.replace("/", "-")
    DATASETS[_name] = DatasetSpec(
        _name, "classification", _files,
        {path: "https://raw.githubusercontent.com/cardiffnlp/tweeteval/4fbd22cd78421f05b1ecdb4fc5725bc7a7bd8f66/datasets/"
         + path.removeprefix("tweeteval/") for path in (*_files.values(), *_support)},
        support=_support,
    )
# WNUT-2020 Task 2: informative COVID-19 English tweets (binary classification; read by
# entangle.data.classification.read_wnut2020). Its files' SHA-256 are not recorded yet (see UNCHECKED).
DATASETS["wnut2020"] = _spec(
    "wnut2020",
    {"train": "wnut2020/train.tsv", "dev": "wnut2020/valid.tsv", "test": "wnut2020/test.tsv"},
    "https://raw.githubusercontent.com/VinAIResearch/COVID19Tweet/0284b848ec5988447f73f192e376e66eeb543c7f/",
    {"train": "train.tsv", "dev": "valid.tsv", "test": "test.tsv"},
    task="classification",
)
#: Named datasets whose files' SHA-256 could not be recorded (the machine this release was built on has
#: no access to their repository): read from a data directory, never downloaded unchecked.
UNCHECKED = {"wnut2020": "https://github.com/VinAIResearch/COVID19Tweet"}
for _language in MASAKHANER_LANGUAGES:
    DATASETS[f"masakhaner-{_language}"] = _spec(
        f"masakhaner-{_language}",
        {split: f"masakhaner/{_language}/{split}.txt" for split in SPLITS},
        "https://raw.githubusercontent.com/masakhane-io/masakhane-ner/ba5843cd08aa491d5f96a5e809e71eb9ec461391/data/",
        {split: f"{_language}/{split}.txt" for split in SPLITS},
    )


class ChecksumError(RuntimeError):
    """A downloaded file is not the expected one."""


class UnknownDatasetError(ValueError):
    pass


class DownloadError(OSError):
    """A named dataset that is neither in a local directory nor downloadable here."""


def default_data_dir() -> Path | None:
    if "ENTANGLE_DATA_DIR" in os.environ:
        return Path(os.environ["ENTANGLE_DATA_DIR"])
    shared = Path("../shared/data")
    return shared if shared.is_dir() else None


def cache_root() -> Path:
    """Where downloads and conversions go: ``$ENTANGLE_CACHE``, else ``~/.cache/entangle``."""
    return Path(os.environ.get("ENTANGLE_CACHE", Path.home() / ".cache" / "entangle"))


def cache_dir() -> Path:
    return cache_root() / "datasets"


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def download(url: str, target: Path, expected_sha256: str) -> Path:
    """Fetch ``url`` to ``target`` through a temporary file, keeping it only if the checksum matches."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".part")
    with urllib.request.urlopen(url, timeout=60) as response, open(partial, "wb") as handle:
        while block := response.read(1 << 20):
            handle.write(block)
    actual = sha256(partial)
    if actual != expected_sha256:
        partial.unlink()
        raise ChecksumError(f"{url}: SHA-256 {actual} does not match the expected {expected_sha256}")
    partial.replace(target)
    return target


def dataset_files(name: str, data_dir: str | Path | None = None) -> dict[str, Path]:
    """split -> local path of a named dataset, downloading what is not found locally."""
    if name not in DATASETS:
        raise UnknownDatasetError(f"unknown dataset {name!r}; known: {', '.join(sorted(DATASETS))}")
    spec = DATASETS[name]
    local = Path(data_dir) if data_dir is not None else default_data_dir()
    if local is not None and all((local / relative).is_file() for relative in (*spec.files.values(), *spec.support)):
        return {split: local / relative for split, relative in spec.files.items()}
    if name in UNCHECKED:
        where = local / name if local is not None else f"a data directory (--data-dir DIR: DIR/{name}/)"
        raise UnknownDatasetError(
            f"{name}: not found in {where}, and it is not downloaded: the SHA-256 of its files are not recorded "
            f"yet, so a download could not be checked. Put {', '.join(Path(p).name for p in spec.files.values())} "
            f"from {UNCHECKED[name]} in {where}")
    for relative in (*spec.files.values(), *spec.support):
        cached = cache_dir() / relative
        if not cached.is_file() or sha256(cached) != CHECKSUMS[relative]:
            try:
                download(spec.urls[relative], cached, CHECKSUMS[relative])
            except (urllib.error.URLError, TimeoutError) as err:  # no network: say where the files could come from
                missing = local / relative if local is not None else relative
                raise DownloadError(
                    f"{name}: {missing} is not here and {spec.urls[relative]} could not be downloaded "
                    f"({getattr(err, 'reason', err)}); give --data-dir (or $ENTANGLE_DATA_DIR) a directory that holds it") from None
    return {split: cache_dir() / relative for split, relative in spec.files.items()}
