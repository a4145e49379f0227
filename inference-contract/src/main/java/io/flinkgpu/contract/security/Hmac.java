package io.flinkgpu.contract.security;

import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.Base64;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/** HMAC-SHA256 over byte arrays, encoded as unpadded URL-safe base64, compared in constant time. */
public final class Hmac {
    public static final String ALGORITHM = "HmacSHA256";
    /** Keys shorter than this are refused: a guessable key signs nothing. */
    public static final int MIN_KEY_BYTES = 16;

    private Hmac() {}

    /** The signature of {@code parts}, concatenated, under {@code key}. */
    public static String sign(byte[] key, byte[]... parts) {
        checkKey(key);
        try {
            Mac mac = Mac.getInstance(ALGORITHM);
            mac.init(new SecretKeySpec(key, ALGORITHM));
            for (byte[] p : parts) {
                mac.update(p);
            }
            return Base64.getUrlEncoder().withoutPadding().encodeToString(mac.doFinal());
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is not available", e);
        }
    }

    /** Whether {@code signature} is {@code key}'s signature of {@code parts}; never throws for a bad signature. */
    public static boolean verify(byte[] key, String signature, byte[]... parts) {
        if (signature == null) {
            return false;
        }
        byte[] expected = sign(key, parts).getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        return MessageDigest.isEqual(expected, signature.trim().getBytes(java.nio.charset.StandardCharsets.US_ASCII));
    }

    /** Throws unless {@code key} is long enough to be a key. */
    public static void checkKey(byte[] key) {
        if (key == null || key.length < MIN_KEY_BYTES) {
            throw new IllegalArgumentException("an HMAC key needs at least " + MIN_KEY_BYTES + " bytes");
        }
    }
}
