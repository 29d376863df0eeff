"""The fine-tune's data path, in process: the lazy JSONL index and its located errors, which tokens carry
a loss in each record shape, packing (rows, positions, and a mask that keeps packed records apart:
the logits of a record inside a packed row equal its logits alone), padding."""
from __future__ import annotations

import json
import random

import pytest
import torch

import make_tiny_llm as mk
from trainkit.textdata import IGNORE, DataError, Item, JsonlIndex, TokenizedSet, check_tokenizer, collate, encode

pytestmark = pytest.mark.timeout(120)


def write_lines(path, lines):
    path.write_text("".join(line + "\n" for line in lines))
    return path


@pytest.fixture(scope="module")
def tok():
    return mk.build_tokenizer()


def words(tok, ids):
    return [tok.convert_ids_to_tokens(i) for i in ids]


def target_words(tok, ids, labels):
    return [tok.convert_ids_to_tokens(i) for i, lab in zip(ids, labels) if lab != IGNORE]


# -- index ----------------------------------------------------------------------
def test_index_keeps_offsets_not_records_and_reads_each_on_demand(tmp_path):
    recs = [{"text": f"counting : {w}"} for w in mk.NUMBERS[:5]]
    path = write_lines(tmp_path / "t.jsonl", [json.dumps(recs[0]), "", "  ", *map(json.dumps, recs[1:])])
    idx = JsonlIndex(path)
    assert len(idx) == 5 and list(idx.lines) == [1, 4, 5, 6, 7]
    assert idx.offsets.itemsize == 8 and not hasattr(idx, "records")
    assert [idx.record(i) for i in (4, 0, 2)] == [recs[4], recs[0], recs[2]]
    assert idx.shapes == {"text": 5, "prompt": 0, "messages": 0}


@pytest.mark.parametrize("line,expected", [
    ('{"text": "a"', "not valid JSON"),
    ('["text"]', "expected a JSON object, got list"),
    ('{"input": "a", "output": "b"}', "expected 'text', 'prompt'+'completion' or 'messages' (keys: input, output)"),
    ('{"prompt": "a"}', "'prompt' and 'completion' must both be strings"),
    ('{"messages": [{"role": "user", "content": "hi"}]}', "no assistant turn"),
    ('{"messages": [{"role": "bot", "content": "hi"}]}', "messages[0]: expected"),
    ('{"text": 3}', "'text' must be a string"),
])
def test_a_bad_line_is_named_by_file_and_line(tmp_path, line, expected):
    path = write_lines(tmp_path / "train.jsonl", ['{"text": "ok"}', "", line, '{"text": "ok"}'])
    with pytest.raises(DataError) as err:
        JsonlIndex(path)
    assert err.value.line == 3 and str(err.value).startswith(f"{path}:3: ") and expected in str(err.value)
    assert "\n" not in str(err.value)


def test_an_empty_split_is_an_error(tmp_path):
    with pytest.raises(DataError, match=r"val\.jsonl: no records"):
        JsonlIndex(write_lines(tmp_path / "val.jsonl", ["", "   "]))
    with pytest.raises(DataError, match="no such file"):
        JsonlIndex(tmp_path / "missing.jsonl")


# -- shapes and loss masks ------------------------------------------------------------
def test_text_trains_on_every_token(tok):
    ids, labels = encode(tok, {"text": "counting : three four"}, 64)
    assert words(tok, ids) == ["<s>", "counting", ":", "three", "four", "</s>"] and labels == ids


def test_prompt_completion_trains_on_the_completion_and_its_eos(tok):
    ids, labels = encode(tok, {"prompt": "after three comes", "completion": "four five"}, 64)
    assert words(tok, ids) == ["<s>", "after", "three", "comes", "four", "five", "</s>"]
    assert target_words(tok, ids, labels) == ["four", "five", "</s>"]


def test_chat_trains_on_assistant_turns_only(tok):
    rec = {"messages": [{"role": "system", "content": "you are a counter ."},
                        {"role": "user", "content": "count from three"},
                        {"role": "assistant", "content": "three four"},
                        {"role": "user", "content": "count from ten"},
                        {"role": "assistant", "content": "ten eleven"}]}
    ids, labels = encode(tok, rec, 128)
    assert words(tok, ids)[:4] == ["<s>", "<|system|>", "you", "are"]
    assert target_words(tok, ids, labels) == ["three", "four", "<|end|>", "ten", "eleven", "<|end|>"]


def test_truncation_keeps_the_first_tokens(tok):
    ids, labels = encode(tok, {"prompt": "after three comes", "completion": "four five six seven"}, 5)
    assert len(ids) == len(labels) == 5 and target_words(tok, ids, labels) == ["four"]


def test_a_tokenizer_without_chat_template_is_refused_for_chat_data(tmp_path):
    path = write_lines(tmp_path / "train.jsonl", ['{"text": "one two"}', json.dumps(mk.record(random.Random(1), "chat"))])
    with pytest.raises(DataError) as err:
        check_tokenizer(mk.build_tokenizer(chat_template=False), JsonlIndex(path), "/models/x")
    msg = str(err.value)
    assert msg.startswith("/models/x: the tokenizer has no chat template") and "first at line 2" in msg
    check_tokenizer(mk.build_tokenizer(), JsonlIndex(path), "/models/x")      # with a template: fine


def test_an_empty_tokenizer_is_refused(tmp_path):
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast
    empty = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel(vocab={"<unk>": 0, "</s>": 1},
                                                                                  unk_token="<unk>")),
                                    unk_token="<unk>", eos_token="</s>")
    path = write_lines(tmp_path / "train.jsonl", ['{"text": "one two"}'])
    with pytest.raises(DataError, match="nothing but unknown tokens"):
        check_tokenizer(empty, JsonlIndex(path), "/models/empty")


# -- packing and padding ---------------------------------------------------------
def mixed_file(tmp_path, n=40):
    rng = random.Random(3)
    return write_lines(tmp_path / "train.jsonl", [json.dumps(mk.record(rng, "mixed")) for _ in range(n)])


def test_packing_puts_every_record_in_one_row_within_seq_len(tmp_path, tok):
    idx = JsonlIndex(mixed_file(tmp_path))
    packed = TokenizedSet(idx, tok, 48, packing=True)
    flat = [int(i) for row in packed.rows for i in row]
    assert flat == list(range(len(idx))) and len(packed) < len(idx)
    for j in range(len(packed)):
        it = packed.item(j)
        assert len(it.input_ids) <= 48 and len(it.labels) == len(it.position_ids) == len(it.input_ids)
        starts = [k for k, p in enumerate(it.position_ids) if p == 0]
        assert len(starts) == len(packed.rows[j])
        assert all(it.labels[k] == IGNORE for k in starts)      # no target crosses into the next record
    padded = TokenizedSet(idx, tok, 48, packing=False)
    assert len(padded) == len(idx) and padded.item(0).position_ids is None


def test_collate_pads_with_mask_or_positions():
    a, b = Item([5, 6, 7], [5, 6, 7], None), Item([8], [IGNORE], None)
    batch = collate([a, b], pad_id=0)
    assert batch["input_ids"].tolist() == [[5, 6, 7], [8, 0, 0]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 0, 0]]
    assert batch["labels"].tolist() == [[5, 6, 7], [IGNORE] * 3]
    p = collate([Item([5, 6, 7], [IGNORE, 6, 7], [0, 1, 0])], pad_id=0, seq_len=5)
    assert p["position_ids"].tolist() == [[0, 1, 0, 0, 1]] and "attention_mask" not in p
    assert p["labels"].tolist() == [[IGNORE, 6, 7, IGNORE, IGNORE]]


def test_packed_records_do_not_see_each_other(tok):
    """The logits of the second record of a packed row equal its logits when it is alone."""
    model = mk.build_model(tok).eval()
    r1 = encode(tok, {"text": "counting : one two three ."}, 64)
    r2 = encode(tok, {"prompt": "after seven comes", "completion": "eight nine"}, 64)
    row = Item(r1[0] + r2[0], r1[1] + r2[1], list(range(len(r1[0]))) + list(range(len(r2[0]))))
    batch = collate([row], tok.pad_token_id, seq_len=24)
    with torch.no_grad():
        packed = model(input_ids=batch["input_ids"], position_ids=batch["position_ids"], use_cache=False).logits
        alone = model(input_ids=torch.tensor([r2[0]]), use_cache=False).logits
        unmasked = model(input_ids=batch["input_ids"], use_cache=False).logits
    n1, n2 = len(r1[0]), len(r2[0])
    torch.testing.assert_close(packed[0, n1:n1 + n2], alone[0], rtol=1e-5, atol=1e-5)
    # without the positions the second record attends to the first: the check above can fail
    assert not torch.allclose(unmasked[0, n1:n1 + n2], alone[0], atol=1e-3)
