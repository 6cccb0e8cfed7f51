// Reads back an MP4 with libavformat/libavcodec (builds with libav only): the media and render tests' oracle
// of what the MP4 writer wrote.
#pragma once

#ifdef FLOWSCOPE_HAVE_LIBAV
extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libswscale/swscale.h>
}

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace flowscope::test {

// Opens `path` and calls opened(format, stream 0); then decodes stream 0 and calls decoded(frame, rgba) for
// every frame in decoding order, with the frame converted to RGBA (frame->width x frame->height, rows
// 4 * width bytes apart) with the colour matrix and range the stream is tagged with.
inline void
decodeMp4Frames(const std::string& path,
                const std::function<void(const AVFormatContext&, const AVStream&)>& opened,
                const std::function<void(const AVFrame&, const std::vector<std::uint8_t>&)>& decoded) {
    AVFormatContext* format = nullptr;
    if (avformat_open_input(&format, path.c_str(), nullptr, nullptr) < 0)
        throw std::runtime_error("cannot open " + path);
    if (avformat_find_stream_info(format, nullptr) < 0) throw std::runtime_error("no stream info in " + path);
    AVStream* stream = format->streams[0];
    opened(*format, *stream);
    const AVCodec* decoder = avcodec_find_decoder(stream->codecpar->codec_id);
    AVCodecContext* codec = avcodec_alloc_context3(decoder);
    avcodec_parameters_to_context(codec, stream->codecpar);
    if (avcodec_open2(codec, decoder, nullptr) < 0) throw std::runtime_error("cannot open the decoder");
    AVPacket* packet = av_packet_alloc();
    AVFrame* frame = av_frame_alloc();
    SwsContext* sws = nullptr;
    std::vector<std::uint8_t> rgba;
    auto drain = [&] {
        while (avcodec_receive_frame(codec, frame) == 0) {
            if (!sws) {
                sws = sws_getContext(frame->width, frame->height, AVPixelFormat(frame->format), frame->width,
                                     frame->height, AV_PIX_FMT_RGBA,
                                     SWS_BILINEAR | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT, nullptr, nullptr,
                                     nullptr);
                const int* matrix = sws_getCoefficients(
                    frame->colorspace == AVCOL_SPC_BT709 ? SWS_CS_ITU709 : SWS_CS_DEFAULT);
                sws_setColorspaceDetails(sws, matrix, frame->color_range == AVCOL_RANGE_JPEG, matrix, 1, 0,
                                         1 << 16, 1 << 16);
                rgba.resize(std::size_t(frame->width) * std::size_t(frame->height) * 4);
            }
            std::uint8_t* dst[1] = {rgba.data()};
            const int dstStride[1] = {frame->width * 4};
            sws_scale(sws, frame->data, frame->linesize, 0, frame->height, dst, dstStride);
            decoded(*frame, rgba);
        }
    };
    while (av_read_frame(format, packet) >= 0) {
        if (packet->stream_index == 0 && avcodec_send_packet(codec, packet) == 0) drain();
        av_packet_unref(packet);
    }
    avcodec_send_packet(codec, nullptr);
    drain();
    sws_freeContext(sws);
    av_frame_free(&frame);
    av_packet_free(&packet);
    avcodec_free_context(&codec);
    avformat_close_input(&format);
}

} // namespace flowscope::test
#endif
