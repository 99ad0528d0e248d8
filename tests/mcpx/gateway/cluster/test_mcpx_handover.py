"""The hand-over bookkeeping of the NATS mode: frames in flight until answered, frames held for a
moving recipient in order and within bounds, and refused once their time is up."""

from __future__ import annotations

from mcpx_router.mcpx.gateway.cluster._handover import Frame, HandOver

TOPIC = "room"


def frame(pid: str, n: int, refused: list[tuple[int, str]] | None = None, size: int = 10) -> Frame:
    def refuse(error: str, message: str) -> None:
        if refused is not None:
            refused.append((n, error))

    return Frame(TOPIC, pid, str(n).encode().ljust(size), refuse)


def test_an_answered_frame_is_no_longer_followed_and_a_late_answer_finds_nothing() -> None:
    frames = HandOver(5.0, answer_wait=10.0)
    first, second = frames.sent(frame("a", 1), 0.0), frames.sent(frame("a", 2), 1.0)
    assert first != second and not frames.idle()
    answered = frames.answered(first)
    assert answered is not None and answered.data.startswith(b"1")
    assert frames.answered(first) is None  # answered twice: the second one is ignored
    assert frames.expire(10.5) == [] and frames.answered(second) is not None
    third = frames.sent(frame("a", 3), 11.0)
    frames.expire(21.5)  # no answer within answer_wait: forgotten, never sent again
    assert frames.answered(third) is None and frames.idle()


def test_frames_in_flight_are_bounded_and_the_oldest_is_forgotten() -> None:
    frames = HandOver(5.0, in_flight=2)
    seqs = [frames.sent(frame("a", n), 0.0) for n in range(3)]
    assert frames.answered(seqs[0]) is None
    assert frames.answered(seqs[1]) is not None and frames.answered(seqs[2]) is not None


def test_held_frames_go_out_in_order_when_their_recipient_is_back() -> None:
    frames = HandOver(5.0)
    for n in range(3):
        assert frames.keep(frame("a", n), float(n))
    assert frames.keep(frame("b", 9), 0.0)
    assert frames.holding(TOPIC, "a") and frames.held_count() == 4
    assert [f.data.strip() for f in frames.release(TOPIC, "a")] == [b"0", b"1", b"2"]
    assert not frames.holding(TOPIC, "a") and frames.held_count() == 1
    assert frames.release(TOPIC, "a") == []


def test_held_frames_whose_time_is_up_are_returned_to_refuse_oldest_first() -> None:
    frames = HandOver(2.0)
    frames.keep(frame("a", 1), 0.0)
    frames.keep(frame("a", 2), 1.5)
    assert frames.expire(1.9) == []
    assert [f.data.strip() for f in frames.expire(2.0)] == [b"1"]
    assert frames.holding(TOPIC, "a")
    assert [f.data.strip() for f in frames.expire(3.5)] == [b"2"]
    assert frames.idle()


def test_a_move_is_remembered_for_the_hand_over_time_and_a_leave_for_good_gives_the_frames_back() -> None:
    frames = HandOver(2.0)
    frames.moved(TOPIC, "a", 0.0)
    assert frames.moving(TOPIC, "a", 1.9) and not frames.moving(TOPIC, "b", 1.0)
    frames.expire(2.0)
    assert not frames.moving(TOPIC, "a", 2.0)
    frames.keep(frame("a", 1), 3.0)
    assert [f.data.strip() for f in frames.gone(TOPIC, "a")] == [b"1"] and frames.idle()


def test_holding_is_bounded_per_recipient_in_count_and_per_gateway_in_count_and_bytes() -> None:
    per_recipient = HandOver(5.0, per_recipient=2)
    assert per_recipient.keep(frame("a", 1), 0.0) and per_recipient.keep(frame("a", 2), 0.0)
    assert not per_recipient.keep(frame("a", 3), 0.0)
    assert per_recipient.keep(frame("b", 1), 0.0)  # another recipient has room of its own

    in_all = HandOver(5.0, frames=3)
    assert all(in_all.keep(frame(pid, 1), 0.0) for pid in "abc")
    assert not in_all.keep(frame("d", 1), 0.0)

    in_bytes = HandOver(5.0, size=25)
    assert in_bytes.keep(frame("a", 1, size=20), 0.0)
    assert not in_bytes.keep(frame("b", 1, size=10), 0.0)
    in_bytes.release(TOPIC, "a")  # room again once released
    assert in_bytes.keep(frame("b", 1, size=10), 0.0)


def test_no_hand_over_time_holds_nothing() -> None:
    frames = HandOver(0.0)
    frames.moved(TOPIC, "a", 0.0)
    assert not frames.moving(TOPIC, "a", 0.0) and not frames.keep(frame("a", 1), 0.0)
