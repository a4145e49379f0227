package io.flinkgpu.contract.control;

import static io.flinkgpu.contract.control.ControlMessageCodecTest.plan;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.flinkgpu.contract.control.ControlPlanState.Outcome;
import io.flinkgpu.contract.control.PlanVerifier.Verdict;
import io.flinkgpu.contract.security.Hmac;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Signed plans: sign, verify, key rotation, and every way a record can fail its signature. */
class SignedPlanTest {
    static final byte[] K1 = "first-key-0123456789abcdef".getBytes(StandardCharsets.UTF_8);
    static final byte[] K2 = "second-key-0123456789abcdef".getBytes(StandardCharsets.UTF_8);
    static final PlanSigner SIGNER_1 = new PlanSigner("k1", K1);
    static final PlanSigner SIGNER_2 = new PlanSigner("k2", K2);
    private static final ObjectMapper JSON = new ObjectMapper();

    private static PlanVerifier verifier(Map<String, byte[]> keys) {
        return new PlanVerifier(keys);
    }

    private static ObjectNode tree(byte[] record) throws Exception {
        return (ObjectNode) JSON.readTree(record);
    }

    private static byte[] bytes(ObjectNode node) throws Exception {
        return JSON.writeValueAsBytes(node);
    }

    @Test
    void theEnvelopeCarriesTheExactPlanBytesAndAVerifiableSignature() throws Exception {
        byte[] planJson = ControlMessageCodec.encode(plan(7));
        byte[] record = SIGNER_1.sign(planJson);
        ObjectNode node = tree(record);
        assertThat(node.get("key_id").textValue()).isEqualTo("k1");
        assertThat(Base64.getDecoder().decode(node.get("plan").textValue())).isEqualTo(planJson);
        // the documented MAC input: domain, key id, line break, plan bytes
        assertThat(node.get("signature").textValue()).isEqualTo(Hmac.sign(K1,
                "flink-gpu-inference plan v1\nk1\n".getBytes(StandardCharsets.UTF_8), planJson));

        PlanVerifier.Result r = verifier(Map.of("k1", K1)).verify(record);
        assertThat(r.verdict()).isEqualTo(Verdict.VALID);
        assertThat(r.plan()).isEqualTo(planJson);
        assertThat(r.keyId()).isEqualTo("k1");
        assertThat(new String(record, StandardCharsets.UTF_8)).doesNotContain(new String(K1, StandardCharsets.UTF_8));
        assertThat(SIGNER_1.toString()).doesNotContain(new String(K1, StandardCharsets.UTF_8));
    }

    @Test
    void duringRotationPlansUnderEitherKeyVerify() throws Exception {
        PlanVerifier both = verifier(Map.of("k1", K1, "k2", K2));
        ControlPlanState state = new ControlPlanState(null, both);
        assertThat(state.offer(SIGNER_1.sign(plan(1)))).isEqualTo(Outcome.APPLIED);
        assertThat(state.offer(SIGNER_2.sign(plan(2)))).isEqualTo(Outcome.APPLIED);
        assertThat(state.currentEpoch()).isEqualTo(2);
        // once k1 is retired, its plans no longer pass
        ControlPlanState retired = new ControlPlanState(plan(2), verifier(Map.of("k2", K2)));
        assertThat(retired.offer(SIGNER_1.sign(plan(3)))).isEqualTo(Outcome.BAD_SIGNATURE);
        assertThat(retired.offer(SIGNER_2.sign(plan(3)))).isEqualTo(Outcome.APPLIED);
        assertThat(retired.badSignatureCount()).isEqualTo(1);
        assertThat(both.toString()).contains("k1", "k2").doesNotContain(new String(K1, StandardCharsets.UTF_8));
    }

    @Test
    void anUnknownKeyIdIsABadSignature() throws Exception {
        PlanVerifier v = verifier(Map.of("k1", K1));
        assertThat(v.verify(SIGNER_2.sign(plan(1))).verdict()).isEqualTo(Verdict.UNKNOWN_KEY);
        // the right key under another name is still an unknown key
        byte[] renamed = new PlanSigner("k9", K1).sign(plan(1));
        assertThat(v.verify(renamed).verdict()).isEqualTo(Verdict.UNKNOWN_KEY);
        ObjectNode noKeyId = tree(SIGNER_1.sign(plan(1)));
        noKeyId.remove("key_id");
        assertThat(v.verify(bytes(noKeyId)).verdict()).isEqualTo(Verdict.UNKNOWN_KEY);

        ControlPlanState state = new ControlPlanState(null, v);
        assertThat(state.offer(SIGNER_2.sign(plan(1)))).isEqualTo(Outcome.BAD_SIGNATURE);
        assertThat(state.badSignatureCount()).isEqualTo(1);
        assertThat(state.current()).isNull();
    }

    @Test
    void aTamperedPlanOrSignatureOrARenamedKeyIdFails() throws Exception {
        PlanVerifier v = verifier(Map.of("k1", K1, "k2", K2));
        byte[] good = SIGNER_1.sign(plan(4));

        ObjectNode tamperedPlan = tree(good);
        String changed = new String(ControlMessageCodec.encode(plan(4)), StandardCharsets.UTF_8)
                .replace("\"subtask\":0", "\"subtask\":1");
        tamperedPlan.put("plan", Base64.getEncoder().encodeToString(changed.getBytes(StandardCharsets.UTF_8)));
        assertThat(v.verify(bytes(tamperedPlan)).verdict()).isEqualTo(Verdict.BAD_SIGNATURE);

        ObjectNode tamperedSignature = tree(good);
        String sig = tamperedSignature.get("signature").textValue();
        tamperedSignature.put("signature", (sig.charAt(0) == 'A' ? "B" : "A") + sig.substring(1));
        assertThat(v.verify(bytes(tamperedSignature)).verdict()).isEqualTo(Verdict.BAD_SIGNATURE);

        // k1's signature presented as k2's: the key id is part of the MAC input
        ObjectNode otherKeyId = tree(good);
        otherKeyId.put("key_id", "k2");
        assertThat(v.verify(bytes(otherKeyId)).verdict()).isEqualTo(Verdict.BAD_SIGNATURE);

        // a MAC over the plan bytes alone, without the domain prefix, is not a plan signature
        ObjectNode noDomain = tree(good);
        noDomain.put("signature", Hmac.sign(K1, ControlMessageCodec.encode(plan(4))));
        assertThat(v.verify(bytes(noDomain)).verdict()).isEqualTo(Verdict.BAD_SIGNATURE);

        ControlPlanState state = new ControlPlanState(plan(3), v);
        for (ObjectNode bad : new ObjectNode[] {tamperedPlan, tamperedSignature, otherKeyId, noDomain}) {
            assertThat(state.offer(bytes(bad))).isEqualTo(Outcome.BAD_SIGNATURE);
        }
        assertThat(state.badSignatureCount()).isEqualTo(4);
        assertThat(state.current()).isEqualTo(plan(3));
        assertThat(state.offer(good)).isEqualTo(Outcome.APPLIED);
    }

    @Test
    void bareOrSignaturelessPlansAreRefusedWhereSignaturesAreRequired() throws Exception {
        ControlPlanState state = new ControlPlanState(null, verifier(Map.of("k1", K1)));
        assertThat(state.offer(ControlMessageCodec.encode(plan(1)))).isEqualTo(Outcome.UNSIGNED);
        ObjectNode noSignature = tree(SIGNER_1.sign(plan(1)));
        noSignature.remove("signature");
        assertThat(state.offer(bytes(noSignature))).isEqualTo(Outcome.UNSIGNED);
        noSignature.put("signature", "");
        assertThat(state.offer(bytes(noSignature))).isEqualTo(Outcome.UNSIGNED);
        assertThat(state.unsignedCount()).isEqualTo(3);
        assertThat(state.current()).isNull();
        assertThat(state.appliedCount()).isZero();
    }

    @Test
    void withSignaturesOptionalBarePlansPassButBadSignaturesDoNot() {
        ControlPlanState state = new ControlPlanState(null, new PlanVerifier(Map.of("k1", K1), false));
        assertThat(state.offer(ControlMessageCodec.encode(plan(1)))).isEqualTo(Outcome.APPLIED);
        assertThat(state.offer(SIGNER_1.sign(plan(2)))).isEqualTo(Outcome.APPLIED);
        assertThat(state.offer(SIGNER_2.sign(plan(3)))).isEqualTo(Outcome.BAD_SIGNATURE);
        assertThat(state.currentEpoch()).isEqualTo(2);
    }

    @Test
    void aReplayedOlderSignedPlanIsStale() {
        ControlPlanState state = new ControlPlanState(null, verifier(Map.of("k1", K1)));
        byte[] five = SIGNER_1.sign(plan(5));
        byte[] six = SIGNER_1.sign(plan(6));
        assertThat(state.offer(five)).isEqualTo(Outcome.APPLIED);
        assertThat(state.offer(six)).isEqualTo(Outcome.APPLIED);
        assertThat(state.offer(five)).isEqualTo(Outcome.STALE);
        assertThat(state.offer(six)).isEqualTo(Outcome.STALE);
        assertThat(state.staleCount()).isEqualTo(2);
        assertThat(state.currentEpoch()).isEqualTo(6);
    }

    @Test
    void trustedModeTakesBarePlansAndThePlanOfAnEnvelope() {
        ControlPlanState state = new ControlPlanState();
        assertThat(state.offer(ControlMessageCodec.encode(plan(1)))).isEqualTo(Outcome.APPLIED);
        assertThat(state.offer(SIGNER_2.sign(plan(2)))).isEqualTo(Outcome.APPLIED);
        assertThat(state.current()).isEqualTo(plan(2));
        assertThat(state.unsignedCount() + state.badSignatureCount()).isZero();
    }

    @Test
    void aValidSignatureOverAnInvalidPlanIsInvalid() {
        ControlPlanState state = new ControlPlanState(null, verifier(Map.of("k1", K1)));
        assertThat(state.offer(SIGNER_1.sign("{\"schema_version\":1,\"epoch\":0}".getBytes(StandardCharsets.UTF_8))))
                .isEqualTo(Outcome.INVALID);
        // an envelope inside an envelope is no plan
        assertThat(state.offer(SIGNER_1.sign(SIGNER_1.sign(plan(1))))).isEqualTo(Outcome.INVALID);
        assertThat(state.invalidCount()).isEqualTo(2);
    }

    @Test
    void malformedEnvelopesAreInvalid() {
        String[][] cases = {
            {"{\"plan\":5,\"key_id\":\"k1\",\"signature\":\"x\"}", "base64 string"},
            {"{\"plan\":\"***\",\"key_id\":\"k1\",\"signature\":\"x\"}", "not base64"},
            {"{\"plan\":\"e30=\",\"key_id\":7,\"signature\":\"x\"}", "'key_id' must be a string"},
            {"{\"plan\":\"e30=\",\"key_id\":\"k1\",\"signature\":[1]}", "'signature' must be a string"},
            {"{\"plan\":\"e30=\",\"plan\":\"e30=\"}", "malformed"},
            {"{\"plan\":\"e30=\"} x", "malformed"},
        };
        for (String[] c : cases) {
            assertThatThrownBy(() -> PlanEnvelope.parse(c[0].getBytes(StandardCharsets.UTF_8)))
                    .as("record %s", c[0])
                    .isInstanceOf(InvalidControlMessageException.class)
                    .hasMessageContaining(c[1]);
            ControlPlanState verifying = new ControlPlanState(null, verifier(Map.of("k1", K1)));
            assertThat(verifying.offer(c[0].getBytes(StandardCharsets.UTF_8))).isEqualTo(Outcome.INVALID);
            assertThat(new ControlPlanState().offer(c[0].getBytes(StandardCharsets.UTF_8))).isEqualTo(Outcome.INVALID);
        }
    }

    @Test
    void signersAndVerifiersRefuseUnusableKeysAndKeyIds() {
        assertThatThrownBy(() -> new PlanSigner("k1", "short".getBytes(StandardCharsets.UTF_8)))
                .hasMessageContaining("at least " + Hmac.MIN_KEY_BYTES);
        assertThatThrownBy(() -> new PlanSigner("has space", K1)).hasMessageContaining("key id");
        assertThatThrownBy(() -> new PlanSigner("a\nb", K1)).hasMessageContaining("key id");
        assertThatThrownBy(() -> new PlanVerifier(Map.of())).hasMessageContaining("at least one key");
        assertThatThrownBy(() -> new PlanVerifier(Map.of("k1", new byte[3])))
                .hasMessageContaining("k1").hasMessageContaining("at least");
        assertThatThrownBy(() -> new PlanVerifier(Map.of("", K1))).hasMessageContaining("key id");
    }
}
