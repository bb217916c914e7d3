"""Batch 4's Keras layers and small whole models for scripts/tf_graph_parity.py (see
scripts/tf_graph_parity_cases4.py): (name, make, input shape, call options) as the script's KERAS."""

import tensorflow as tf


def keras_cases():
    L = tf.keras.layers
    return [
        ("c4_k_conv1dT", lambda: L.Conv1DTranspose(3, 3, strides=2, padding="same"), (2, 5, 2), {}),
        ("c4_k_conv3dT", lambda: L.Conv3DTranspose(2, 2, strides=2), (1, 2, 3, 2, 2), {}),
        ("c4_k_sepconv1d", lambda: L.SeparableConv1D(4, 3, padding="same", depth_multiplier=2), (2, 7, 3), {}),
        ("c4_k_conv1d_dil", lambda: L.Conv1D(3, 3, dilation_rate=2, padding="same", activation="tanh"), (2, 9, 2), {}),
        ("c4_k_conv1d_s2", lambda: L.Conv1D(3, 4, strides=2, use_bias=False), (2, 9, 2), {}),
        ("c4_k_conv3d_same", lambda: L.Conv3D(2, 3, padding="same", strides=2), (1, 5, 5, 5, 2), {}),
        ("c4_k_dwconv_s2", lambda: L.DepthwiseConv2D(3, strides=2, padding="valid"), (2, 7, 7, 2), {}),
        ("c4_k_dwconv1d", lambda: L.DepthwiseConv1D(3, padding="same", depth_multiplier=2), (2, 6, 3), {}),
        ("c4_k_conv2dT_valid", lambda: L.Conv2DTranspose(2, (3, 2), strides=(2, 1), padding="valid"), (1, 3, 4, 3), {}),
        ("c4_k_mha_mask", lambda: L.MultiHeadAttention(num_heads=2, key_dim=2, value_dim=3), (2, 4, 5), {"mask": True}),
        ("c4_k_mha_causal", lambda: L.MultiHeadAttention(num_heads=2, key_dim=3), (2, 4, 6), {"causal": True}),
        ("c4_k_attention_scale", lambda: L.Attention(use_scale=True, score_mode="concat"), (2, 4, 3), {"pair": True}),
        ("c4_k_additive_attention", lambda: L.AdditiveAttention(), (2, 4, 3), {"pair": True}),
        ("c4_k_layernorm_axis", lambda: L.LayerNormalization(axis=[1, 2], epsilon=1e-3), (2, 3, 4), {}),
        ("c4_k_layernorm_rms", lambda: L.LayerNormalization(rms_scaling=True), (2, 5), {}),
        ("c4_k_groupnorm1d", lambda: L.GroupNormalization(groups=3), (2, 4, 6), {}),
        ("c4_k_bn_axis1", lambda: L.BatchNormalization(axis=1), (3, 2, 4), {"training": False}),
        ("c4_k_bn_infer_conv", lambda: L.BatchNormalization(), (2, 3, 3, 4), {"training": False}),
        ("c4_k_embedding_maskzero", lambda: L.Embedding(6, 3, mask_zero=True), (2, 5), {"ints": 6}),
        ("c4_k_gru_v1", lambda: L.GRU(3, reset_after=False, return_sequences=True), (2, 4, 3), {}),
        ("c4_k_lstm_state", lambda: L.LSTM(3, return_state=True), (2, 4, 2), {"first": True}),
        ("c4_k_lstm_mask", lambda: _masked(L.LSTM(3, return_sequences=True)), (2, 5, 2), {}),
        ("c4_k_gru_goback", lambda: L.GRU(3, go_backwards=True), (2, 4, 2), {}),
        ("c4_k_bigru_concat", lambda: L.Bidirectional(L.GRU(2, return_sequences=True), merge_mode="sum"), (2, 4, 3), {}),
        ("c4_k_timedist_conv", lambda: L.TimeDistributed(L.Conv2D(2, 2)), (1, 3, 4, 4, 2), {}),
        ("c4_k_upsample1d", lambda: L.UpSampling1D(3), (2, 3, 2), {}),
        ("c4_k_upsample3d", lambda: L.UpSampling3D(2), (1, 2, 2, 2, 1), {}),
        ("c4_k_upsample_bil_odd", lambda: L.UpSampling2D((2, 3), interpolation="bilinear"), (1, 3, 2, 2), {}),
        ("c4_k_zeropad1d", lambda: L.ZeroPadding1D((1, 2)), (2, 3, 2), {}),
        ("c4_k_zeropad3d", lambda: L.ZeroPadding3D(1), (1, 2, 2, 2, 1), {}),
        ("c4_k_crop1d", lambda: L.Cropping1D((1, 2)), (2, 6, 2), {}),
        ("c4_k_crop3d", lambda: L.Cropping3D(((1, 0), (0, 1), (1, 1))), (1, 3, 3, 4, 1), {}),
        ("c4_k_gap1d", lambda: L.GlobalAveragePooling1D(), (2, 5, 3), {}),
        ("c4_k_gap3d", lambda: L.GlobalAveragePooling3D(keepdims=True), (1, 3, 3, 3, 2), {}),
        ("c4_k_gmp2d", lambda: L.GlobalMaxPooling2D(), (2, 4, 4, 3), {}),
        ("c4_k_avgpool1d", lambda: L.AveragePooling1D(3, strides=2, padding="same"), (2, 7, 3), {}),
        ("c4_k_maxpool3d", lambda: L.MaxPooling3D(2, padding="same"), (1, 3, 4, 4, 2), {}),
        ("c4_k_avgpool3d", lambda: L.AveragePooling3D(2), (1, 4, 4, 4, 2), {}),
        ("c4_k_relu_opts", lambda: L.ReLU(max_value=1.0, negative_slope=0.1, threshold=0.2), (3, 4), {}),
        ("c4_k_leaky", lambda: L.LeakyReLU(negative_slope=0.2), (3, 4), {}),
        ("c4_k_prelu_shared", lambda: L.PReLU(shared_axes=[1, 2]), (2, 3, 3, 2), {}),
        ("c4_k_softmax_neg", lambda: L.Softmax(axis=-2), (2, 3, 4), {}),
        ("c4_k_rescaling", lambda: L.Rescaling(1.0 / 255, offset=-0.5), (2, 3), {}),
        ("c4_k_normalization", lambda: L.Normalization(mean=[0.5, -1.0, 2.0], variance=[1.0, 4.0, 0.25]), (2, 3), {}),
        ("c4_k_random_flip_inf", lambda: L.RandomFlip(), (1, 3, 3, 2), {"training": False}),
        ("c4_k_activation_mix", lambda: _seq(L.Activation("hard_sigmoid"), L.Activation("softsign"), L.Activation("selu")), (3, 4), {}),
        ("c4_k_activation_more", lambda: _seq(L.Activation("mish"), L.Activation("hard_silu"), L.Activation("relu6")), (3, 4), {}),
        ("c4_k_activation_log_softmax", lambda: L.Activation("log_softmax"), (3, 4), {}),
        ("c4_k_dot_norm", lambda: L.Dot(axes=-1, normalize=True), (3, 4), {"pair": True}),
        ("c4_k_dot_axes", lambda: L.Dot(axes=(1, 1)), (2, 3, 4), {"pair": True}),
        ("c4_k_concat", lambda: L.Concatenate(axis=1), (2, 3), {"pair": True}),
        ("c4_k_average", lambda: L.Average(), (2, 3), {"pair": True}),
        ("c4_k_maximum", lambda: L.Maximum(), (2, 3), {"pair": True}),
        ("c4_k_minimum_sub", lambda: L.Subtract(), (2, 3), {"pair": True}),
        ("c4_k_multiply", lambda: L.Multiply(), (2, 3), {"pair": True}),
        ("c4_k_dense_3d", lambda: L.Dense(4, activation="swish"), (2, 3, 5), {}),
        ("c4_k_einsum_dense", lambda: L.EinsumDense("abc,cd->abd", output_shape=(None, 4), bias_axes="d"), (2, 3, 5), {}),
        ("c4_k_reshape", lambda: L.Reshape((-1, 2)), (2, 3, 4), {}),
        ("c4_k_gauss_noise_inf", lambda: L.GaussianNoise(0.5), (2, 3), {"training": False}),
        ("c4_k_alpha_dropout_inf", lambda: L.AlphaDropout(0.5), (2, 3), {"training": False}),
        ("c4_k_category_enc", lambda: L.CategoryEncoding(num_tokens=5, output_mode="multi_hot"), (2, 3), {"ints": 5}),
        # whole small models, as users write them
        ("c4_m_cnn", lambda: _seq(L.Conv2D(4, 3, padding="same", activation="relu"), L.MaxPooling2D(), L.Conv2D(3, 3),
                                  L.GlobalAveragePooling2D(), L.Dense(2, activation="softmax")), (2, 8, 8, 1), {}),
        ("c4_m_cnn_bn", lambda: _seq(L.Conv2D(4, 3, use_bias=False), L.BatchNormalization(), L.ReLU(), L.Flatten(),
                                     L.Dropout(0.3), L.Dense(3)), (2, 6, 6, 2), {"training": False}),
        ("c4_m_mlp", lambda: _seq(L.Dense(8, activation="relu"), L.LayerNormalization(), L.Dense(4, activation="tanh"),
                                  L.Dense(1, activation="sigmoid")), (5, 6), {}),
        ("c4_m_autoenc", lambda: _seq(L.Conv2D(3, 3, strides=2, padding="same", activation="elu"),
                                      L.Conv2DTranspose(2, 3, strides=2, padding="same", activation="sigmoid")), (1, 6, 6, 2), {}),
        ("c4_m_transformer", lambda: Block(), (2, 5, 8), {}),
        ("c4_m_text_lstm", lambda: _seq(L.Embedding(20, 4, mask_zero=True), L.LSTM(3), L.Dense(2)), (2, 6),
         {"ints": 20, "nograd_input": True}),
        ("c4_m_gru_stack", lambda: _seq(L.GRU(4, return_sequences=True), L.GRU(3), L.Dense(2)), (2, 5, 3), {}),
        ("c4_m_conv1d_text", lambda: _seq(L.Conv1D(4, 3, activation="relu"), L.GlobalMaxPooling1D(), L.Dense(2)), (2, 8, 3), {}),
        ("c4_m_resnet_block", lambda: ResBlock(), (1, 5, 5, 4), {}),
        ("c4_m_sepconv_net", lambda: _seq(L.SeparableConv2D(4, 3, padding="same", activation="relu6"), L.DepthwiseConv2D(3),
                                          L.GlobalAveragePooling2D(), L.Dense(3, activation="log_softmax")), (1, 6, 6, 3), {}),
        ("c4_k_conv1d_causal_dil", lambda: L.Conv1D(3, 3, padding="causal", dilation_rate=2), (2, 9, 2), {}),
        ("c4_k_conv2d_cf", lambda: L.Conv2D(3, 2, data_format="channels_first"), (1, 2, 5, 5), {}),
        ("c4_k_mha_axes", lambda: L.MultiHeadAttention(num_heads=2, key_dim=2, attention_axes=(1, 2)), (1, 3, 2, 4), {"self": True}),
        ("c4_k_embedding_3d", lambda: L.Embedding(7, 2), (2, 3, 2), {"ints": 7}),
        ("c4_k_bn_3d_infer", lambda: L.BatchNormalization(), (2, 3, 3, 3, 2), {"training": False}),
        ("c4_k_layernorm_4d", lambda: L.LayerNormalization(epsilon=0.5, center=False), (2, 3, 3, 4), {}),
        ("c4_k_attention_causal", lambda: L.Attention(use_scale=True), (2, 4, 3), {"causal_pair": True}),
        ("c4_k_lstm_unroll", lambda: L.LSTM(3, unroll=True, return_sequences=True), (2, 4, 2), {}),
        ("c4_k_masking_gru", lambda: _seq(L.Masking(0.0), L.GRU(3)), (2, 5, 2), {"zero_tail": True}),
        ("c4_k_simplernn_state", lambda: L.SimpleRNN(3, return_state=True, activation="relu"), (2, 4, 2), {"first": True}),
        ("c4_k_bilstm_seq", lambda: L.Bidirectional(L.LSTM(2, return_sequences=True)), (2, 4, 3), {}),
        ("c4_k_convlstm2d", lambda: L.ConvLSTM2D(2, 2, padding="same"), (1, 3, 4, 4, 1), {}),
        ("c4_k_conv2d_s2_even", lambda: L.Conv2D(3, 3, strides=2, padding="same"), (1, 6, 6, 2), {}),
        ("c4_k_hashed_free_discret", lambda: L.Discretization(bin_boundaries=[-0.5, 0.0, 0.5]), (3, 4), {"nograd": True}),
    ]


def _seq(*layers):
    return tf.keras.Sequential(list(layers))


class Block(tf.keras.layers.Layer):
    """A post-norm transformer encoder block: attention, residual, layer norm, feed-forward."""

    def __init__(self):
        super().__init__()
        L = tf.keras.layers
        self.att = L.MultiHeadAttention(num_heads=2, key_dim=4)
        self.n1, self.n2 = L.LayerNormalization(), L.LayerNormalization()
        self.ff1, self.ff2 = L.Dense(16, activation="gelu"), L.Dense(8)

    def call(self, t):
        h = self.n1(t + self.att(t, t, use_causal_mask=True))
        return self.n2(h + self.ff2(self.ff1(h)))


class ResBlock(tf.keras.layers.Layer):
    def __init__(self):
        super().__init__()
        L = tf.keras.layers
        self.c1, self.c2 = L.Conv2D(4, 3, padding="same"), L.Conv2D(4, 3, padding="same")
        self.bn = L.BatchNormalization()

    def call(self, t):
        return tf.nn.relu(t + self.bn(self.c2(tf.nn.relu(self.c1(t))), training=False))


def _masked(layer):
    class Masked(tf.keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.inner = layer

        def call(self, t):
            mask = tf.sequence_mask(tf.constant([3, 5]), tf.shape(t)[1])
            return self.inner(t, mask=mask)

    return Masked()

