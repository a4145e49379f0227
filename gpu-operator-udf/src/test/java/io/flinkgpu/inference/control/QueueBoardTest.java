package io.flinkgpu.inference.control;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class QueueBoardTest {
    @Test
    void outstandingIsWhatTheSubtaskHoldsPlusWhatIsOnItsWay() {
        QueueBoard board = QueueBoard.acquire("job/outstanding", 4);
        try {
            assertThat(board.parallelism()).as("no subtask yet").isZero();
            assertThat(board.outstanding(1)).isEqualTo(QueueBoard.UNKNOWN);
            board.sent(1); // not on the board: not counted
            QueueBoard.Slot slot = board.join(1, 2);
            assertThat(board.parallelism()).isEqualTo(2);
            assertThat(board.outstanding(1)).isZero();
            board.sent(1);
            board.sent(1);
            board.sent(1);
            assertThat(board.outstanding(1)).isEqualTo(3);
            slot.arrived();
            slot.publish(1); // it queued the one that arrived
            assertThat(board.outstanding(1)).isEqualTo(3);
            slot.arrived();
            slot.arrived();
            slot.arrived(); // one more than was counted (sent by a router elsewhere): never below zero
            slot.publish(4);
            assertThat(board.outstanding(1)).isEqualTo(4);
            board.sent(1);
            assertThat(board.outstanding(1)).isEqualTo(5);
            slot.publish(0);
            assertThat(board.outstanding(1)).isEqualTo(1);
            assertThat(board.outstanding(0)).isEqualTo(QueueBoard.UNKNOWN);
            assertThat(board.outstanding(9)).isEqualTo(QueueBoard.UNKNOWN);
            // a subtask beyond the capacity the board started with (a router with a smaller maximum
            // parallelism created it): the board grows and keeps the slots it had
            QueueBoard.Slot far = board.join(9, 10);
            board.sent(9);
            assertThat(board.outstanding(9)).isEqualTo(1);
            far.publish(2);
            assertThat(board.outstanding(9)).isEqualTo(3);
            assertThat(board.outstanding(1)).as("kept across the growth").isEqualTo(1);
            assertThatThrownBy(() -> board.join(-1, 10)).isInstanceOf(IllegalArgumentException.class);
        } finally {
            board.release();
        }
    }

    @Test
    void aReopenedSubtaskStartsAfreshAndTheOldAttemptCannotTakeItOff() {
        QueueBoard board = QueueBoard.acquire("job/reopen", 2);
        try {
            QueueBoard.Slot first = board.join(0, 1);
            board.sent(0);
            board.sent(0); // lost in a failover: never arrive
            assertThat(board.outstanding(0)).isEqualTo(2);
            QueueBoard.Slot second = board.join(0, 1);
            assertThat(board.outstanding(0)).as("the restarted attempt's slot").isZero();
            board.leave(0, first); // the old attempt closing late
            assertThat(board.outstanding(0)).isZero();
            board.leave(0, second);
            assertThat(board.outstanding(0)).isEqualTo(QueueBoard.UNKNOWN);
        } finally {
            board.release();
        }
    }

    @Test
    void holdersShareOneBoardPerKeyAndTheLastOneDropsIt() {
        int before = QueueBoard.boards();
        QueueBoard router = QueueBoard.acquire("job-a/stage", 2);
        QueueBoard subtask = QueueBoard.acquire("job-a/stage", 2);
        QueueBoard otherJob = QueueBoard.acquire("job-b/stage", 2);
        assertThat(subtask).isSameAs(router);
        assertThat(otherJob).isNotSameAs(router);
        subtask.join(0, 1);
        assertThat(otherJob.outstanding(0)).as("another job's subtask 0").isEqualTo(QueueBoard.UNKNOWN);
        assertThat(QueueBoard.boards()).isEqualTo(before + 2);
        router.release();
        assertThat(QueueBoard.acquire("job-a/stage", 2)).as("still held by the subtask").isSameAs(subtask);
        subtask.release();
        subtask.release();
        otherJob.release();
        assertThat(QueueBoard.boards()).isEqualTo(before);
        QueueBoard fresh = QueueBoard.acquire("job-a/stage", 2);
        try {
            assertThat(fresh).isNotSameAs(router);
            assertThat(fresh.outstanding(0)).isEqualTo(QueueBoard.UNKNOWN);
        } finally {
            fresh.release();
        }
    }
}
